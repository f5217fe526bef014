"""Scalar reward model variants on a tiny random Llama: the probing layer, last / mean /
attention pooling, named heads and their combination, scale_for_train, export and reload."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from lightrft.adapters.reward_models import HfScalarRewardModel, RewardModelCard
from lightrft.adapters.reward_models.card import SCORING_FILE
from lightrft.adapters.reward_models.engine_scalar import EngineScalarRewardModel
from lightrft.adapters.reward_models.scalar_net import ScalarRewardNet
from lightrft.adapters.reward_models.score_heads import (
    CLIP_LOGIT_SCALE,
    AttentionPooling,
    HeadSpec,
    probed_index,
)
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier
from tests.unit.adapters.reward_models.test_scalar_reward_model import samples

CPU = torch.device("cpu")
_one_thread = pytest.fixture(autouse=True)(one_torch_thread)

IDS = torch.tensor([[5, 9, 14, 3, 7, 8], [0, 0, 11, 12, 13, 4]])  # row 1 left-padded (pad 0)
MASK = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])


def _net(spec: HeadSpec, seed: int = 0) -> ScalarRewardNet:
    return ScalarRewardNet(tiny_classifier(seed=seed), spec=spec, init_seed=3).eval()


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(-1) - 1).clamp(min=0)


def test_probing_layer_reads_that_hidden_state() -> None:
    classifier = tiny_classifier(seed=0)
    layers = classifier.config.num_hidden_layers
    for k, index in ((0, 0), (1, 1), (-1, layers - 1)):
        net = ScalarRewardNet(classifier, spec=HeadSpec(probing_layer=k)).eval()
        with torch.no_grad():
            got = net.hidden(IDS, MASK)
            out = classifier.base_model(
                input_ids=IDS,
                attention_mask=MASK,
                position_ids=_positions(MASK),
                output_hidden_states=True,
            )
        assert torch.equal(got, out.hidden_states[index]), k
    assert probed_index(-1, layers) == layers - 1
    with pytest.raises(ValueError, match="probing_layer 2 is out of range"):
        probed_index(2, layers)
    with pytest.raises(ValueError, match="out of range"):
        ScalarRewardNet(classifier, spec=HeadSpec(probing_layer=-(layers + 1)))


def test_attention_pooling_weights_sum_to_one_over_attended_tokens() -> None:
    torch.manual_seed(0)
    pool = AttentionPooling(16, num_heads=4)
    hidden = torch.randn(2, 6, 16)
    weights = pool.weights(hidden, MASK)  # [B, heads, T]
    assert weights.shape == (2, 4, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4))
    assert torch.all(weights[1, :, :2] == 0)  # padding gets no weight
    # by hand: head h pools v's slice h with softmax(q_h . k_h / sqrt(4))
    k, v = pool.k(hidden), pool.v(hidden)
    expected = torch.zeros(2, 16)
    for b in range(2):
        for h in range(4):
            cols = slice(4 * h, 4 * h + 4)
            keep = MASK[b].bool()
            logits = (k[b, keep, cols] @ pool.query[cols]) / 2.0
            w = torch.softmax(logits, dim=0)
            expected[b, cols] = w @ v[b, keep, cols]
    assert torch.allclose(pool(hidden, MASK), expected, atol=1e-6)


@pytest.mark.parametrize("pooling", ["last", "mean", "attn"])
def test_scores_do_not_depend_on_padding_side(pooling: str) -> None:
    net = _net(HeadSpec(pooling=pooling, heads=("a", "b")))
    right_ids = torch.tensor([[11, 12, 13, 4, 0, 0]])
    right_mask = torch.tensor([[1, 1, 1, 1, 0, 0]])
    with torch.no_grad():
        left = net(IDS[1:], MASK[1:])
        right = net(right_ids, right_mask)
    assert left.shape == (1, 2)
    assert torch.allclose(left, right, atol=1e-5)


def test_mean_pooling_is_the_mean_of_attended_hidden_states() -> None:
    net = _net(HeadSpec(pooling="mean", heads=("only",)))
    with torch.no_grad():
        hidden = net.hidden(IDS, MASK)
        scores = net(IDS, MASK)
        head = net.scoring.heads["only"]
        expected = torch.stack([head(hidden[0].mean(0)), head(hidden[1, 2:].mean(0))]).squeeze(-1)
    assert torch.allclose(scores[:, 0], expected, atol=1e-6)


def test_named_heads_combination_and_the_original_mlp_head() -> None:
    spec = HeadSpec(heads=("preference", "alignment"), head_arch="mlp", weights=(0.25, 0.75))
    net = _net(spec)
    rm = HfScalarRewardModel(
        tiny_classifier(seed=0), tiny_tokenizer(), CPU, card=RewardModelCard(heads=spec)
    )
    with torch.no_grad():
        scores = net(IDS, MASK)
        heads = rm.pair_head_scores(["q"], ["an answer"])
        combined = rm.pair_scores(["q"], ["an answer"])
    assert net.head_names == ("preference", "alignment")
    assert torch.all((scores > 0) & (scores < 1))  # sigmoid outputs
    assert torch.allclose(combined, 0.25 * heads[:, 0] + 0.75 * heads[:, 1])


def test_scale_for_train_multiplies_training_scores_by_the_learned_scale() -> None:
    spec = HeadSpec(heads=("preference",), head_arch="mlp", scale_for_train=True)
    net = _net(spec)
    with torch.no_grad():
        plain = net.eval()(IDS, MASK)
        scaled = net.train()(IDS, MASK)
    assert math.exp(CLIP_LOGIT_SCALE) == pytest.approx(1 / 0.07)
    assert torch.allclose(scaled, plain / 0.07, rtol=1e-5)
    assert [n for n, _ in net.named_parameters() if "logit_scales" in n] == [
        "scoring.logit_scales.preference"
    ]


def test_variant_exports_and_reloads_with_the_same_scores(tmp_path: Path) -> None:
    spec = HeadSpec(
        pooling="attn", probing_layer=-1, heads=("p", "q"), head_arch="mlp", scale_for_train=True
    )
    rm = HfScalarRewardModel(
        tiny_classifier(seed=1), tiny_tokenizer(), CPU, card=RewardModelCard(heads=spec)
    )
    with torch.no_grad():  # move the fresh parts off their initial values
        for p in rm.net.scoring.parameters():
            p.add_(0.1)
    rm.net.eval()
    with torch.no_grad():
        before = rm.pair_head_scores(["a prompt", "b"], ["x", "a longer answer"])
    rm.export_hf(tmp_path / "model")
    assert (tmp_path / "model" / SCORING_FILE).is_file()
    loaded = HfScalarRewardModel.from_pretrained(tmp_path / "model", CPU)
    assert loaded.card.heads == spec
    with torch.no_grad():
        after = loaded.pair_head_scores(["a prompt", "b"], ["x", "a longer answer"])
    assert torch.allclose(before, after, atol=1e-6)
    (tmp_path / "model" / SCORING_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=SCORING_FILE):
        HfScalarRewardModel.from_pretrained(tmp_path / "model", CPU)


def test_head_spec_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown pooling method 'max'"):
        HeadSpec(pooling="max")
    with pytest.raises(ValueError, match="distinct"):
        HeadSpec(heads=("a", "a"))
    with pytest.raises(ValueError, match="2 head weights for 1 head"):
        HeadSpec(weights=(0.5, 0.5))


def test_scoring_returns_the_combination_and_each_heads_score() -> None:
    spec = HeadSpec(heads=("p", "q"), weights=(0.25, 0.75))
    rm = HfScalarRewardModel.for_scoring(
        tiny_classifier(seed=2), tiny_tokenizer(), CPU, card=RewardModelCard(heads=spec)
    )
    batch = samples(["2+2?", "3+3?"], ["4", "six"])
    result = rm.score(batch)
    heads = rm.head_scores(batch)
    assert torch.allclose(result.scores, 0.25 * heads["p"] + 0.75 * heads["q"])
    assert float(result.metrics["q_mean"]) == pytest.approx(float(heads["q"].mean()))


def test_the_engine_scorer_refuses_a_variant() -> None:
    card = RewardModelCard(heads=HeadSpec(pooling="mean"))
    with pytest.raises(ValueError, match="engine's pooling runner reads the last token"):
        EngineScalarRewardModel(object(), tiny_tokenizer(), card=card)  # type: ignore[arg-type]
