"""``VllmRolloutEngine`` on the real vLLM CPU backend (skipped when vLLM is not installed).

All tests share one in-process engine (:func:`shared_engine`), reset to
``tiny_vllm_model(0)`` before each use. Expected log-probs come from the HF policy's
forward and from the HF engine's filtered distribution (``sampling_logprobs``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from lightrft.adapters.fakes import completions_batch
from lightrft.adapters.fakes.batches import make_sequence_batch
from lightrft.adapters.hf import HfPolicy, LoraParams
from lightrft.adapters.vllm import VllmEngineParams, start_llm
from lightrft.domain.sampling import TokenDistribution, sampling_logprobs
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.contract.real_adapters import short_prompts
from tests.unit.adapters.hf.hf_tiny import tiny_model
from tests.unit.adapters.vllm.vllm_tiny import (
    require_vllm,
    shared_engine,
    tiny_vllm_model,
    write_model_dir,
)

PROMPT = (5, 9, 12, 40, 41, 42)
RESPONSE = (20, 21, 22, 23, 24)


def engine_scores(engine, prompt: Sequence[int], response: Sequence[int]) -> torch.Tensor:  # noqa: ANN001
    """vLLM's log-probs (R,) of fixed ``response`` tokens after ``prompt`` (prompt log-probs)."""
    import vllm
    from vllm.inputs import TokensPrompt

    ids = list(prompt) + list(response)
    out = engine.llm.generate(
        [TokensPrompt(prompt_token_ids=ids)],
        vllm.SamplingParams(max_tokens=1, prompt_logprobs=0),
        use_tqdm=False,
    )[0]
    entries = out.prompt_logprobs[len(prompt) :]
    return torch.tensor([e[t].logprob for e, t in zip(entries, response, strict=True)])


def policy_scores(policy: HfPolicy, prompt: Sequence[int], response: Sequence[int]) -> torch.Tensor:
    with torch.no_grad():
        return policy.forward(make_sequence_batch([prompt], [response])).logprobs[0].float()


def test_sync_after_a_training_step_matches_the_policy() -> None:
    engine, _ = shared_engine()
    policy = HfPolicy(tiny_vllm_model(0))  # the engine's initial weights
    before = engine_scores(engine, PROMPT, RESPONSE)
    torch.testing.assert_close(before, policy_scores(policy, PROMPT, RESPONSE), atol=1e-4, rtol=0)

    optimizer = torch.optim.Adam(policy.module.parameters(), lr=1e-2)
    batch = make_sequence_batch([PROMPT], [RESPONSE])
    loss = -policy.forward(batch).logprobs.sum()  # one step of "raise these tokens' log-prob"
    loss.backward()
    optimizer.step()
    trained = policy_scores(policy, PROMPT, RESPONSE)

    stale = engine_scores(engine, PROMPT, RESPONSE)
    assert (stale - trained).abs().max() > 1e-2  # the step changed the policy, not the engine
    torch.testing.assert_close(stale, before, atol=1e-6, rtol=0)

    state = ((n, p.detach().clone()) for n, p in policy.module.named_parameters())
    engine.load_weights(policy.weights_for_sync(state))
    torch.testing.assert_close(engine_scores(engine, PROMPT, RESPONSE), trained, atol=1e-4, rtol=0)
    assert engine.last_sync_seconds is not None


def test_lora_policy_syncs_merged_weights() -> None:
    engine, _ = shared_engine()
    policy = HfPolicy(tiny_vllm_model(0), lora=LoraParams(rank=4, alpha=8))
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, param in policy.module.named_parameters():
            if "lora_B" in name:  # "trained" adapters: B != 0 changes the outputs
                param.copy_(torch.randn(param.shape, generator=generator) * 0.1)
    expected = policy_scores(policy, PROMPT, RESPONSE)
    assert (engine_scores(engine, PROMPT, RESPONSE) - expected).abs().max() > 1e-3
    state = ((n, p.detach().clone()) for n, p in policy.module.named_parameters())
    engine.load_weights(policy.weights_for_sync(state))
    torch.testing.assert_close(engine_scores(engine, PROMPT, RESPONSE), expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize(
    "dist",
    [
        TokenDistribution(0.7, top_k=5),
        TokenDistribution(1.3, top_p=0.8),
        TokenDistribution(1.0, min_p=0.1),
    ],
    ids=["top_k", "top_p", "min_p"],
)
def test_logprobs_are_those_of_the_filtered_distribution(dist: TokenDistribution) -> None:
    engine, _ = shared_engine()
    model = tiny_vllm_model(0)
    sampling = SamplingParams(
        n=2,
        temperature=dist.temperature,
        top_k=dist.top_k,
        top_p=dist.top_p,
        min_p=dist.min_p,
        max_new_tokens=6,
        seed=1,
    )
    prompts = short_prompts()[:2]
    for c in engine.generate(prompts, sampling):
        ids = list(prompts[c.prompt_index].prompt_token_ids) + list(c.token_ids)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]  # [T, V]
        start = len(prompts[c.prompt_index].prompt_token_ids) - 1
        steps = logits[start : start + len(c.token_ids)]  # [L, V] next-token logits
        expected = sampling_logprobs(steps, dist).gather(-1, torch.tensor(c.token_ids)[:, None])
        torch.testing.assert_close(
            torch.tensor(c.logprobs), expected.squeeze(-1), atol=1e-4, rtol=0
        )


def test_stop_token_ids_and_stop_strings() -> None:
    engine, _ = shared_engine()
    prompts = short_prompts()[:1]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=12)
    free = engine.generate(prompts, greedy)[0]
    assert free.finish_reason == "length" and len(free.token_ids) == 12
    stop_id = free.token_ids[3]
    first = free.token_ids.index(stop_id)
    by_id = engine.generate(
        prompts, SamplingParams(temperature=0.0, max_new_tokens=12, stop_token_ids=(stop_id,))
    )[0]
    assert by_id.finish_reason == "stop"
    assert by_id.token_ids == free.token_ids[: first + 1]  # up to and including the stop id
    stop = next(ch for ch in free.text[2:] if ch.isprintable() and not ch.isspace())
    by_string = engine.generate(
        prompts, SamplingParams(temperature=0.0, max_new_tokens=12, stop_strings=(stop,))
    )[0]
    assert by_string.finish_reason == "stop"
    assert by_string.text.endswith(stop) and by_string.text.count(stop) == 1
    assert free.token_ids[: len(by_string.token_ids)] == by_string.token_ids
    assert len(by_string.token_ids) < len(free.token_ids)


def test_samples_do_not_depend_on_the_batch() -> None:
    engine, _ = shared_engine()
    prompts = short_prompts()
    sampling = SamplingParams(n=2, max_new_tokens=6, seed=5)
    together = engine.generate(prompts, sampling)
    alone = engine.generate([prompts[2]], sampling)
    assert [c.token_ids for c in alone] == [c.token_ids for c in together[4:6]]
    assert together[4].token_ids != together[5].token_ids  # per-sample seeds differ


def test_cpu_sleep_is_an_honest_no_op() -> None:
    engine, _ = shared_engine()
    assert not engine.sleep_frees_memory
    engine.sleep()
    assert engine.last_sleep_freed_memory is False and not engine.is_awake
    with pytest.raises(RuntimeError, match="asleep"):
        engine.load_weights(iter([]))
    engine.wake_up()
    assert engine.is_awake


def test_media_rows_are_refused_by_a_text_models_engine() -> None:
    from lightrft.adapters.engine_parts.source_media import SOURCE_MEDIA_KEY, SourceMedia

    engine, _ = shared_engine()
    raw = PromptRecord("img", "x", (5, 6), multimodal={"images": [object()]})
    with pytest.raises(ValueError, match=r"img: .*not the raw items .*prompt encoder"):
        engine.generate([raw], SamplingParams(max_new_tokens=2))
    media = {SOURCE_MEDIA_KEY: (SourceMedia("image", 6, (object(),), (1,)),)}
    encoded = PromptRecord("enc", "x", (5, 6), multimodal=media)
    with pytest.raises(ValueError, match=r"enc: \{'image': 1\} .*serves a llama model"):
        engine.generate([encoded], SamplingParams(max_new_tokens=2))


def test_unsupported_model_and_fp8_fail_before_vllm_starts(tmp_path) -> None:  # noqa: ANN001
    require_vllm()
    small_heads = tmp_path / "small"
    write_model_dir(small_heads, tiny_model(0))  # head_dim 16
    with pytest.raises(ValueError, match="head_dim=16"):
        start_llm(VllmEngineParams(str(small_heads), dtype="float32"), "cpu")
    ok = write_model_dir(tmp_path / "ok", tiny_vllm_model(0))
    with pytest.raises(ValueError, match="fp8"):
        start_llm(VllmEngineParams(str(ok), dtype="float32", quantization="fp8"), "cpu")


def test_contract_batch_helper_agrees_with_engine_scores() -> None:
    """The contract's sampled-token comparison and the prompt-log-prob scores agree."""
    engine, _ = shared_engine()
    policy = HfPolicy(tiny_vllm_model(0))
    prompts = short_prompts()[:1]
    completion = engine.generate(prompts, SamplingParams(max_new_tokens=5, seed=2))[0]
    with torch.no_grad():
        expected = policy.forward(completions_batch(prompts, [completion])).logprobs[0]
    scores = engine_scores(engine, prompts[0].prompt_token_ids, completion.token_ids)
    torch.testing.assert_close(scores, expected[: len(scores)].float(), atol=1e-4, rtol=0)
    torch.testing.assert_close(torch.tensor(completion.logprobs), scores, atol=1e-4, rtol=0)


def test_close_tears_down_what_vllm_started_and_only_once() -> None:
    import torch.distributed as dist

    from tests.unit.adapters.vllm.vllm_tiny import close_shared_engine

    engine, _ = shared_engine()
    assert dist.is_initialized()  # in-process vLLM made the default group (none existed)
    close_shared_engine()
    assert not dist.is_initialized()  # vLLM's teardown ran now, its exit hook is gone
    engine.close()  # a second close does nothing
    with pytest.raises(RuntimeError, match="closed"):
        engine.generate(short_prompts()[:1], SamplingParams(max_new_tokens=2))
    with pytest.raises(RuntimeError, match="closed"):
        engine.wake_up()


CLOSE_THEN_OWN_GROUP = """
from lightrft.adapters.accelerators import CpuAccelerator
from lightrft.adapters.distributed import init_process_group_from_env, shutdown_process_group
from tests.unit.adapters.vllm.vllm_tiny import close_shared_engine, shared_engine

shared_engine()
close_shared_engine()
init_process_group_from_env(CpuAccelerator(), single_process_group=True)  # a later test's
shutdown_process_group()
"""


@pytest.mark.slow
def test_a_process_that_closed_its_engine_exits_without_a_traceback() -> None:
    """What `make test` did: a group created and destroyed after the vLLM tests, then
    vLLM's exit hook failed on it ("Invalid process group specified", ten times nested)."""
    import os
    import subprocess
    import sys

    require_vllm()
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_THEN_OWN_GROUP],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
