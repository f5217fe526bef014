"""The process reward model on a tiny random Llama: step scores equal the LM's own forward
read at the step ends (computed here row by row, unpadded), before and after training on step
labels; aggregation of those scores; export and reload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lightrft.adapters.reward_models.encoding import PairEncoding
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.process_reward_training import ProcessRewardTrainer
from lightrft.application.reward_model_training import RewardTrainParams
from lightrft.domain.process_rewards import StepLabelledExample
from lightrft.domain.types import Completion, OptimizerParams, PromptRecord, RewardSample
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
CARD = ProcessRewardCard(separator="\n", encoding=PairEncoding(max_length=None))

_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


def prm(aggregate: str = "min", seed: int = 0) -> HfProcessRewardModel:
    return HfProcessRewardModel(
        tiny_model(seed), tiny_tokenizer(), CPU, card=CARD, aggregate=aggregate, micro_batch_size=2
    )


def sample(prompt: str, response: str) -> RewardSample:
    return RewardSample(PromptRecord("q", prompt, (1,)), Completion(0, (2,), response, "stop"))


def direct_scores(model: HfProcessRewardModel, prompt: str, response: str) -> list[float]:
    """p(+) at each step end from one unpadded forward of the LM over the whole text
    tokenized at once, each end found as the token count of the text up to it: independent
    of the adapter's piecewise encoding and its padded batches."""
    tokenizer = tiny_tokenizer()
    steps = [s for s in response.split("\n") if s.strip()]
    text, ends = prompt, []
    for step in steps:
        text += step + "\n"
        ends.append(len(tokenizer(text, add_special_tokens=False)["input_ids"]) - 1)
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        logits = model.lm(ids).logits[0]
    plus, minus = tokenizer.convert_tokens_to_ids(["+", "-"])
    return [float(torch.softmax(logits[e, [plus, minus]], -1)[0]) for e in ends]


SAMPLES = [
    sample("Q: 2+3*2? ", "2+3=5\n5*2=10\n"),
    sample("Q: 7-1? ", "7-1=6"),
    sample("Q: long one ", "a\nbb\nccc\ndddd\n"),
]


def test_step_scores_equal_the_lm_read_at_the_step_ends() -> None:
    model = prm()
    scores = model.step_scores(SAMPLES)
    for s, got in zip(SAMPLES, scores, strict=True):
        want = direct_scores(model, s.prompt.prompt_text, s.completion.text)
        assert got.tolist() == pytest.approx(want, abs=1e-5)
    assert [len(s) for s in scores] == [2, 1, 4]


@pytest.mark.parametrize("how", ["min", "last", "product", "mean"])
def test_aggregated_reward_from_the_direct_scores(how: str) -> None:
    model = prm(how)
    rewards = model.score([*SAMPLES, sample("Q ", "  ")]).scores
    ops = {"min": min, "last": lambda v: v[-1], "mean": lambda v: sum(v) / len(v)}
    ops["product"] = lambda v: torch.tensor(v, dtype=torch.float64).prod().item()
    want = [
        ops[how](direct_scores(model, s.prompt.prompt_text, s.completion.text)) for s in SAMPLES
    ]
    assert rewards.tolist() == pytest.approx([*want, 0.0], abs=1e-5)


def rows(n: int, seed: int) -> list[StepLabelledExample]:
    """Steps marked ``ok`` are good, ``no`` bad (a pattern a tiny model learns quickly)."""
    rng = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        good = torch.rand(3, generator=rng) > 0.5
        steps = tuple(f"s{k}{i % 7} {'ok' if g else 'no'}" for k, g in enumerate(good.tolist()))
        out.append(
            StepLabelledExample(f"Q{i % 5}: ", steps, tuple(float(g) for g in good.tolist()))
        )
    return out


def test_trained_prm_scores_equal_the_direct_computation(tmp_path: Path) -> None:
    model = prm()
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=1e-2, max_grad_norm=1.0))
    strategy.prepare(model.module)
    params = RewardTrainParams(batch_size=16, micro_batch_size=8, epochs=3, seed=0)
    held_out = rows(24, seed=1)
    trainer = ProcessRewardTrainer(model, strategy, rows(64, seed=0), params, eval_rows=held_out)
    before = trainer.evaluate(held_out)
    history = trainer.run()
    after = trainer.evaluate(held_out)
    assert len(history) == 12 and history[-1]["eval/step_accuracy"] == after.step_accuracy
    assert after.step_accuracy >= 0.95 > before.step_accuracy, (before, after)
    assert after.loss < before.loss
    probe = [sample("Q1: ", "s03 ok\ns13 no\ns23 ok\n")]
    got = model.step_scores(probe)[0]
    assert got.tolist() == pytest.approx(
        direct_scores(model, "Q1: ", probe[0].completion.text), abs=1e-5
    )
    assert got[0] > 0.5 > got[1] and got[2] > 0.5
    # exported with safetensors and the card; reloaded, it scores the same
    out = model.export_hf(tmp_path / "prm")
    assert (out / "model.safetensors").is_file()
    card = json.loads((out / "lightrft_process_reward.json").read_text())
    assert card["separator"] == "\n" and card["positive_token"] == "+"
    assert '"\\n"' in (out / "README.md").read_text()
    loaded = HfProcessRewardModel.from_pretrained(out, CPU, aggregate="last")
    assert loaded.card == CARD
    assert loaded.step_scores(probe)[0].tolist() == pytest.approx(got.tolist(), abs=1e-5)


def test_rows_kept_with_ratings_are_no_training_targets() -> None:
    model = prm()
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=1e-2, max_grad_norm=1.0))
    strategy.prepare(model.module)
    rated = StepLabelledExample("Q0: ", ("s00 ok\n",), (-1.0,), uid="f:0", label_range=None)
    trainer = ProcessRewardTrainer(model, strategy, [rated], RewardTrainParams(batch_size=1))
    with pytest.raises(ValueError, match=r"^f:0: step labels \(-1.0,\) are not probabilities"):
        trainer.evaluate([rated])


def test_label_tokens_must_be_one_token() -> None:
    card = ProcessRewardCard(positive_token="good", negative_token="-")
    with pytest.raises(ValueError, match="'good' is 4 tokens"):
        HfProcessRewardModel(tiny_model(0), tiny_tokenizer(), CPU, card=card)


def test_steps_mode_passes_each_step_score_on_its_last_response_token() -> None:
    model = prm("steps")
    tokenizer = tiny_tokenizer()
    text = "2+3=5\n5*2=10\n"
    ids = tuple(tokenizer(text, add_special_tokens=False)["input_ids"])
    s = RewardSample(PromptRecord("q", "Q: ", (1,)), Completion(0, ids, text, "stop"))
    result = model.score([s])
    assert result.scores.tolist() == [0.0]  # the steps carry the reward
    assert result.step_rewards is not None
    (steps,) = result.step_rewards
    # byte tokens: "2+3=5\n" ends at token 5, "5*2=10\n" at token 12
    assert [end for end, _ in steps] == [5, 12]
    want = direct_scores(model, "Q: ", text)
    assert [v for _, v in steps] == pytest.approx(want, abs=1e-5)


def test_step_threshold_turns_each_step_score_into_a_verdict() -> None:
    text = "2+3=5\n5*2=10\n"
    tokenizer = tiny_tokenizer()
    ids = tuple(tokenizer(text, add_special_tokens=False)["input_ids"])
    s = RewardSample(PromptRecord("q", "Q: ", (1,)), Completion(0, ids, text, "stop"))
    want = direct_scores(prm("steps"), "Q: ", text)
    cut = (want[0] + want[1]) / 2  # one step above, one below
    model = HfProcessRewardModel(
        tiny_model(0), tokenizer, CPU, card=CARD, aggregate="steps", step_threshold=cut
    )
    result = model.score([s])
    assert result.step_rewards is not None
    assert [v for _, v in result.step_rewards[0]] == [float(w >= cut) for w in want]
    assert float(result.metrics["step_pass_rate"]) == 0.5
    assert float(result.metrics["step_score_mean"]) == pytest.approx(sum(want) / 2, abs=1e-5)
    with pytest.raises(ValueError, match="step_threshold must be in"):
        HfProcessRewardModel(tiny_model(0), tokenizer, CPU, card=CARD, step_threshold=1.5)
