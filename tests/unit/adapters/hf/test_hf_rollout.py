"""HfRolloutEngine: log-probs match the policy, weights, sleep/wake, stops, seeds, FIRE."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import EOS, make_batch, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
PROMPT_IDS = [[5, 9, 12, 40], [7, 8], [100, 3, 44, 45, 46, 47]]
PROMPTS = [PromptRecord(f"p{i}", "", tuple(ids)) for i, ids in enumerate(PROMPT_IDS)]


def engine(seed: int = 0, **kwargs: object) -> HfRolloutEngine:
    return HfRolloutEngine(tiny_model(seed), tiny_tokenizer(), CPU, **kwargs)


def policy_logprobs(
    seed: int, completions: list[Completion], temperature: float
) -> list[torch.Tensor]:
    """Policy log-probs of each completion's tokens (full forward, padded batch)."""
    prompts = [PROMPT_IDS[c.prompt_index] for c in completions]
    batch = make_batch(prompts, [c.token_ids for c in completions])
    with torch.no_grad():
        lp = HfPolicy(tiny_model(seed)).forward(batch, temperature=temperature).logprobs
    return [lp[i, : len(c.token_ids)] for i, c in enumerate(completions)]


def test_is_a_rollout_engine() -> None:
    assert isinstance(engine(), RolloutEngine)


def test_greedy_picks_the_argmax_and_reports_temperature_one_logprobs() -> None:
    out = engine().generate(PROMPTS, SamplingParams(temperature=0, max_new_tokens=6))
    expected = policy_logprobs(0, out, temperature=1.0)
    model = tiny_model(0)
    for c, lp in zip(out, expected, strict=True):
        torch.testing.assert_close(torch.tensor(c.logprobs), lp, atol=1e-5, rtol=1e-5)
        ids = torch.tensor([PROMPT_IDS[c.prompt_index] + list(c.token_ids)])
        with torch.no_grad():
            argmax = model(ids).logits[0, len(PROMPT_IDS[c.prompt_index]) - 1 : -1].argmax(-1)
        assert argmax.tolist() == list(c.token_ids)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_match_the_policy_at_the_same_temperature(temperature: float) -> None:
    sampling = SamplingParams(n=3, temperature=temperature, max_new_tokens=8, seed=3)
    out = engine().generate(PROMPTS, sampling)
    assert [c.prompt_index for c in out] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for c, lp in zip(out, policy_logprobs(0, out, temperature), strict=True):
        torch.testing.assert_close(torch.tensor(c.logprobs), lp, atol=1e-5, rtol=1e-5)
    assert len({c.token_ids for c in out}) > 3  # samples differ


def test_fire_first_token_uses_its_own_temperature() -> None:
    sampling = SamplingParams(
        temperature=0.7, first_token_temperature=5.0, max_new_tokens=5, seed=1
    )
    out = engine().generate(PROMPTS, sampling)
    hot, normal = policy_logprobs(0, out, 5.0), policy_logprobs(0, out, 0.7)
    for c, h, n in zip(out, hot, normal, strict=True):
        torch.testing.assert_close(torch.tensor(c.logprobs[:1]), h[:1], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(torch.tensor(c.logprobs[1:]), n[1:], atol=1e-5, rtol=1e-5)


def test_filtered_sampling_stays_in_the_filter_and_renormalizes() -> None:
    out = engine().generate(PROMPTS, SamplingParams(top_k=1, max_new_tokens=5, seed=0))
    greedy = engine().generate(PROMPTS, SamplingParams(temperature=0, max_new_tokens=5))
    for c, g in zip(out, greedy, strict=True):
        assert c.token_ids == g.token_ids  # top-1 sampling is greedy
        assert all(lp == 0.0 for lp in c.logprobs)  # probability 1 after renormalization


def test_seed_makes_generation_deterministic() -> None:
    sampling = SamplingParams(n=2, max_new_tokens=8, seed=7)
    first = engine().generate(PROMPTS, sampling)
    assert engine().generate(PROMPTS, sampling) == first
    other = engine().generate(PROMPTS, SamplingParams(n=2, max_new_tokens=8, seed=8))
    assert [c.token_ids for c in other] != [c.token_ids for c in first]


def test_batched_left_padding_equals_one_prompt_at_a_time() -> None:
    sampling = SamplingParams(temperature=0, max_new_tokens=6)
    together = engine().generate(PROMPTS, sampling)
    alone = engine(max_batch_size=1).generate(PROMPTS, sampling)
    assert [c.token_ids for c in together] == [c.token_ids for c in alone]
    for a, b in zip(together, alone, strict=True):
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs))


def test_load_weights_makes_outputs_follow_the_new_weights() -> None:
    sampling = SamplingParams(n=2, max_new_tokens=6, seed=5)
    eng = engine(seed=0)
    target = engine(seed=1).generate(PROMPTS, sampling)
    assert eng.generate(PROMPTS, sampling) != target
    eng.load_weights(tiny_model(1).state_dict().items())
    assert eng.generate(PROMPTS, sampling) == target
    assert eng.weight_loads == 1


def test_load_weights_fills_tied_parameters_and_refuses_unknown_names() -> None:
    eng = HfRolloutEngine(tiny_model(0, tie=True), tiny_tokenizer(), CPU)
    new = tiny_model(1, tie=True)
    eng.load_weights(new.named_parameters())  # lm_head.weight is not listed separately
    assert torch.equal(eng.module.lm_head.weight, new.model.embed_tokens.weight)
    with pytest.raises(KeyError, match="nope"):
        eng.load_weights([("nope", torch.zeros(1))])
    with pytest.raises(ValueError, match="shape"):
        eng.load_weights([("model.norm.weight", torch.zeros(3))])


@pytest.mark.parametrize("tie", [False, True])
def test_sleep_wake_round_trip_keeps_outputs(tie: bool) -> None:
    sampling = SamplingParams(n=2, max_new_tokens=6, seed=11)
    eng = HfRolloutEngine(tiny_model(0, tie=tie), tiny_tokenizer(), CPU)
    before = eng.generate(PROMPTS, sampling)
    eng.sleep()
    assert not eng.is_awake and eng.sleeps == 1
    with pytest.raises(RuntimeError, match="asleep"):
        eng.generate(PROMPTS, sampling)
    eng.wake_up()
    assert eng.is_awake and eng.generate(PROMPTS, sampling) == before


@pytest.mark.parametrize("tie", [False, True])
def test_discard_sleep_frees_weights_and_needs_a_reload(tie: bool) -> None:
    sampling = SamplingParams(n=2, max_new_tokens=6, seed=11)
    eng = HfRolloutEngine(tiny_model(0, tie=tie), tiny_tokenizer(), CPU, sleep_mode="discard")
    before = eng.generate(PROMPTS, sampling)
    eng.sleep()
    assert all(p.device.type == "meta" for p in eng.module.parameters())
    with pytest.raises(RuntimeError, match="wake_up"):
        eng.load_weights(tiny_model(0, tie=tie).named_parameters())
    eng.wake_up()
    with pytest.raises(RuntimeError, match="load_weights"):
        eng.generate(PROMPTS, sampling)
    eng.load_weights(tiny_model(0, tie=tie).named_parameters())
    assert eng.generate(PROMPTS, sampling) == before


def test_length_finish_when_the_budget_runs_out() -> None:
    out = engine().generate(PROMPTS, SamplingParams(temperature=0, max_new_tokens=4))
    assert all(c.finish_reason == "length" and len(c.token_ids) == 4 for c in out)


def test_stop_token_ends_generation_and_is_kept() -> None:
    free = engine().generate(PROMPTS[:1], SamplingParams(temperature=0, max_new_tokens=10))[0]
    stop_id = free.token_ids[3]
    first = free.token_ids.index(stop_id)
    sampling = SamplingParams(temperature=0, max_new_tokens=10, stop_token_ids=(stop_id,))
    out = engine().generate(PROMPTS[:1], sampling)[0]
    assert out.finish_reason == "stop"
    assert out.token_ids == free.token_ids[: first + 1]
    assert out.logprobs == free.logprobs[: first + 1]


def test_eos_ends_generation_and_is_dropped_from_the_text() -> None:
    eng = engine()
    eos = torch.tensor([EOS])
    # make EOS by far the most likely next token everywhere
    hook = eng.module.lm_head.register_forward_hook(lambda m, i, o: o.index_fill(-1, eos, 1e4))
    out = eng.generate(PROMPTS, SamplingParams(max_new_tokens=5, seed=0))
    hook.remove()
    assert all(c.token_ids == (EOS,) and c.finish_reason == "stop" and c.text == "" for c in out)


def test_ignore_eos_runs_to_the_budget_but_stop_ids_still_stop() -> None:
    eng = engine()
    eos = torch.tensor([EOS])
    hook = eng.module.lm_head.register_forward_hook(lambda m, i, o: o.index_fill(-1, eos, 1e4))
    out = eng.generate(PROMPTS, SamplingParams(max_new_tokens=5, seed=0, ignore_eos=True))
    stopped = eng.generate(
        PROMPTS[:1],
        SamplingParams(max_new_tokens=5, seed=0, ignore_eos=True, stop_token_ids=(EOS,)),
    )
    hook.remove()
    assert all(c.token_ids == (EOS,) * 5 and c.finish_reason == "length" for c in out)
    assert stopped[0].token_ids == (EOS,) and stopped[0].finish_reason == "stop"


def test_stop_string_ends_generation() -> None:
    tok = tiny_tokenizer()
    free = engine().generate(PROMPTS[:1], SamplingParams(temperature=0, max_new_tokens=12))[0]
    stop = tok.decode(list(free.token_ids[4:6]))
    # expected end: the first prefix of the tokens whose text contains the stop string
    end = next(k for k in range(1, 13) if stop in tok.decode(list(free.token_ids[:k])))
    sampling = SamplingParams(temperature=0, max_new_tokens=12, stop_strings=(stop,))
    out = engine().generate(PROMPTS[:1], sampling)[0]
    assert out.finish_reason == "stop"
    assert out.token_ids == free.token_ids[:end]
    assert out.text == tok.decode(list(out.token_ids)) and out.text.endswith(stop)


def test_a_completion_does_not_depend_on_the_batch_it_is_drawn_in() -> None:
    # Seeds are per (prompt uid, sample): drawing prompt B alone or next to prompt A gives
    # the same completions, so data-parallel ranks reproduce a single-process run.
    engine = HfRolloutEngine(tiny_model(), tiny_tokenizer(), torch.device("cpu"))
    tok = tiny_tokenizer()
    a = PromptRecord(uid="a", prompt_text="hi", prompt_token_ids=tuple(tok.encode("hello there")))
    b = PromptRecord(uid="b", prompt_text="yo", prompt_token_ids=tuple(tok.encode("yo")))
    sampling = SamplingParams(n=3, temperature=1.0, max_new_tokens=6, seed=11)
    together = engine.generate([a, b], sampling)
    alone = engine.generate([b], sampling)
    assert [c.token_ids for c in together[3:]] == [c.token_ids for c in alone]
    assert len({c.token_ids for c in alone}) > 1  # the samples of one prompt still differ
