"""HfScalarRewardModel: scores at the last token, padding-independent, export and reload,
normalization, offload."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lightrft.adapters.reward_models import (
    HfScalarRewardModel,
    PairEncoding,
    RewardLoraParams,
    RewardModelCard,
    ScoreNormalization,
)
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

CPU = torch.device("cpu")
PROMPTS = ["user: what is 2+2?\nassistant: ", "hi", "user: name a color\nassistant: "]
RESPONSES = ["4", "hello there, how are you today?", "blue"]


def samples(prompts: list[str], responses: list[str]) -> list[RewardSample]:
    return [
        RewardSample(
            PromptRecord(uid=str(i), prompt_text=p, prompt_token_ids=(3,)),
            Completion(prompt_index=i, token_ids=(4,), text=r, finish_reason="stop"),
        )
        for i, (p, r) in enumerate(zip(prompts, responses, strict=True))
    ]


def direct_score(classifier: torch.nn.Module, prompt: str, response: str) -> float:
    """The classifier's own forward on the unpadded sequence (its logit at the last token)."""
    tok = tiny_tokenizer()
    ids = (
        tok(prompt, add_special_tokens=False)["input_ids"]
        + tok(response, add_special_tokens=False)["input_ids"]
    )
    with torch.no_grad():
        return float(classifier(torch.tensor([ids])).logits[0, 0])


@pytest.mark.parametrize("side", ["left", "right"])
def test_scores_equal_value_head_at_last_token(side: str) -> None:
    classifier = tiny_classifier()
    rm = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU, padding_side=side)  # type: ignore[arg-type]
    result = rm.score(samples(PROMPTS, RESPONSES))
    expected = torch.tensor(
        [direct_score(classifier, p, r) for p, r in zip(PROMPTS, RESPONSES, strict=True)]
    )
    assert result.scores.shape == (3,)
    assert result.scores.dtype == torch.float32
    torch.testing.assert_close(result.scores, expected, atol=1e-5, rtol=1e-5)
    # the rows really were padded (different lengths), and micro-batching changes nothing
    rm_small = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU, micro_batch_size=1)
    torch.testing.assert_close(rm_small.score(samples(PROMPTS, RESPONSES)).scores, result.scores)


def test_head_at_last_token_by_hand() -> None:
    classifier = tiny_classifier(seed=3)
    rm = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU)
    tok = tiny_tokenizer()
    ids = (
        tok("ab", add_special_tokens=False)["input_ids"]
        + tok("cde", add_special_tokens=False)["input_ids"]
    )
    with torch.no_grad():
        hidden = classifier.model(torch.tensor([ids])).last_hidden_state[0, -1]  # [H]
        by_hand = float(hidden @ classifier.score.weight[0])
    assert float(rm.score(samples(["ab"], ["cde"])).scores[0]) == pytest.approx(by_hand, abs=1e-5)


def test_max_length_keeps_the_response_end() -> None:
    classifier = tiny_classifier()
    enc = PairEncoding(max_length=6)
    rm = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU, card=RewardModelCard(enc))
    # "abcdefgh" + "xyz" truncated from the left to its last 6 tokens: "fgh" + "xyz"
    score = float(rm.score(samples(["abcdefgh"], ["xyz"])).scores[0])
    assert score == pytest.approx(direct_score(classifier, "fgh", "xyz"), abs=1e-5)


def test_export_and_reload(tmp_path: Path) -> None:
    classifier = tiny_classifier(seed=1)
    rm = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU)
    before = rm.score(samples(PROMPTS, RESPONSES)).scores
    rm.export_hf(tmp_path / "rm", normalization=ScoreNormalization(mean=0.5, std=2.0))
    loaded = HfScalarRewardModel.from_pretrained(tmp_path / "rm", CPU, normalize=True, name="rm")
    after = loaded.score(samples(PROMPTS, RESPONSES))
    torch.testing.assert_close(after.scores, (before - 0.5) / 2.0, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(after.metrics["raw_mean"], before.mean(), atol=1e-5, rtol=1e-5)
    assert not any(p.requires_grad for p in loaded.module.parameters())


def test_lora_export_merges(tmp_path: Path) -> None:
    rm = HfScalarRewardModel(
        tiny_classifier(), tiny_tokenizer(), CPU, lora=RewardLoraParams(rank=2)
    )
    trainable = [n for n, p in rm.module.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in n or n.startswith("head.") for n in trainable)
    with torch.no_grad():  # make the adapters matter
        for name, p in rm.module.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    before = rm.score(samples(PROMPTS, RESPONSES)).scores
    rm.export_hf(tmp_path / "rm")
    after = HfScalarRewardModel.from_pretrained(tmp_path / "rm", CPU).score(
        samples(PROMPTS, RESPONSES)
    )
    torch.testing.assert_close(after.scores, before, atol=1e-4, rtol=1e-4)


def test_offload_and_errors() -> None:
    rm = HfScalarRewardModel(tiny_classifier(), tiny_tokenizer(), CPU)
    rm.offload()
    with pytest.raises(RuntimeError, match="offloaded"):
        rm.score(samples(["a"], ["b"]))
    rm.onload()
    assert rm.score(samples(["a"], ["b"])).scores.shape == (1,)
    with pytest.raises(ValueError, match="no normalization"):
        HfScalarRewardModel(tiny_classifier(), tiny_tokenizer(), CPU, normalize=True)


def _fresh_weights(model: torch.nn.Module, part: str) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if part in n}


def test_fresh_score_head_and_adapters_come_from_the_seed(tmp_path: Path) -> None:
    from lightrft.adapters.reward_models.loading import load_reward_classifier
    from tests.unit.adapters.hf.hf_tiny import tiny_model

    tiny_model().save_pretrained(tmp_path / "lm")  # a causal LM: the score head is new
    torch.manual_seed(3)
    untouched = torch.rand(4)
    torch.manual_seed(3)
    first = load_reward_classifier(tmp_path / "lm", CPU, init_seed=5)
    assert torch.equal(torch.rand(4), untouched)  # the global stream did not move
    torch.rand(1000)
    again = load_reward_classifier(tmp_path / "lm", CPU, init_seed=5)
    other = load_reward_classifier(tmp_path / "lm", CPU, init_seed=6)
    assert torch.equal(first.score.weight, again.score.weight)
    assert not torch.equal(first.score.weight, other.score.weight)

    adapters = []
    for shift in (0, 1000):
        classifier = tiny_classifier()
        torch.rand(shift)  # another global state
        rm = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU, lora=RewardLoraParams(rank=2))
        adapters.append(_fresh_weights(rm.net, "lora_A"))
    assert adapters[0].keys() == adapters[1].keys() and adapters[0]
    assert all(torch.equal(adapters[0][n], adapters[1][n]) for n in adapters[0])
