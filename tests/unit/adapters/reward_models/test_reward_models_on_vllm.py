"""Reward models on vLLM (``reward.sources[*].engine: vllm``) give the HF path's results.

One module-scoped fixture builds, through the wiring registries, each source twice (engine hf
and engine vllm) on the same tiny random Llama directories (head_dim 32, vLLM's CPU minimum):
a scalar reward model (a sequence classifier with a saved normalization and a truncating pair
encoding) and a judge taught two verdicts. Expected values: the HF path's outputs, and for
the judge the taught verdicts. Tolerance for scalar scores: relative 1e-3 (absolute 1e-6);
measured here 2026-11: at most ~1e-6 relative (fp32). Skipped without vLLM; slow (two
in-process vLLM engines start: 60-120 s on the shared 2-core machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from structlog.testing import capture_logs
from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

from lightrft.adapters.reward_models import HfScalarRewardModel, PairEncoding, RewardModelCard
from lightrft.adapters.reward_models.card import ScoreNormalization
from lightrft.adapters.reward_models.engine_scalar import EngineScalarRewardModel
from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.reward_model_configs import GenerativeRmConfig, ScalarRmConfig
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext
from lightrft.entrypoints.wiring.reward_model_builders import build_scalar_rm
from tests.unit.adapters.hf.hf_tiny import EOS, tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import teach
from tests.unit.adapters.vllm.vllm_tiny import require_vllm, tiny_vllm_config

pytestmark = pytest.mark.slow

CPU = torch.device("cpu")
TEMPLATE = "Q {prompt} A {response} V "
VERDICTS = {"good": "Score: 9/10", "poor": "Score: 2/10"}
SMALL_ENGINE = {"engine_kv_cache_gib": 0.0625, "engine_max_model_len": 256}
NORM = ScoreNormalization(mean=0.5, std=2.0)
RTOL = 1e-3


def sample(prompt: str, response: str) -> RewardSample:
    return RewardSample(PromptRecord("q", prompt, (1,)), Completion(0, (2,), response, "stop"))


def write_scalar_rm(directory: Path) -> Path:
    """A random one-label Llama classifier exported with a card: prompts get BOS, pairs are
    cut to 24 tokens from the left, scores normalized by ``NORM``."""
    config: LlamaConfig = tiny_vllm_config()
    config.num_labels = 1
    torch.manual_seed(3)
    classifier = LlamaForSequenceClassification(config).eval()
    card = RewardModelCard(PairEncoding(prompt_special_tokens=True, max_length=24))
    rm = HfScalarRewardModel(classifier, tiny_tokenizer(), CPU, card=card)
    return rm.export_hf(directory, normalization=NORM)


def write_judge(directory: Path) -> Path:
    """A tiny Llama taught to answer the judge prompts of "good" and "poor" (as the judge
    renders them: template, then the tokenizer's chat template) with their verdicts."""
    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_vllm_config())
    tok = tiny_tokenizer()
    render = HfGenerativeRewardModel(None, tok, None, template=TEMPLATE)  # type: ignore[arg-type]
    prompts = [list(render.judge_prompt(sample("2+2", r)).prompt_token_ids) for r in VERDICTS]
    targets = [tok(v, add_special_tokens=False)["input_ids"] + [EOS] for v in VERDICTS.values()]
    teach(model, prompts, targets, steps=80)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Each reward source on hf and on vllm; the vLLM engines are closed at the end."""
    require_vllm()
    root = tmp_path_factory.mktemp("rm_engine")
    rm_dir, judge_dir = write_scalar_rm(root / "rm"), write_judge(root / "judge")
    context = BuildContext(load_config(), judge_dir, CPU, None, lambda: None)  # type: ignore[arg-type,return-value]
    scalar = {"path": str(rm_dir), "normalize": True}
    judge = {"path": str(judge_dir), "template": TEMPLATE, "max_new_tokens": 16}
    built = {
        "scalar_hf": ScalarRmConfig(**scalar),
        "scalar_vllm": ScalarRmConfig(**scalar, engine="vllm", **SMALL_ENGINE),
        "judge_hf": GenerativeRmConfig(**judge),
        "judge_vllm": GenerativeRmConfig(**judge, engine="vllm", **SMALL_ENGINE),
    }
    assert REWARD_SOURCES.get("scalar_rm") is build_scalar_rm  # the builders are registered
    made = {key: REWARD_SOURCES.get(s.type)(s, context) for key, s in built.items()}
    yield made
    made["scalar_vllm"].close()
    made["judge_vllm"].close()


def test_scalar_scores_on_vllm_equal_hf(sources: dict[str, Any]) -> None:
    hf, vllm = sources["scalar_hf"], sources["scalar_vllm"]
    assert isinstance(vllm, EngineScalarRewardModel) and isinstance(hf, HfScalarRewardModel)
    samples = [
        sample("2+2=", "4"),
        sample("Name a color.", " blue"),
        sample("A long question that the card's 24-token limit cuts", " from the left"),
        sample("", "only a response"),
    ]
    expected, got = hf.score(samples), vllm.score(samples)
    assert expected.scores.unique().numel() == len(samples)  # distinct scores: a real check
    torch.testing.assert_close(got.scores, expected.scores, rtol=RTOL, atol=1e-6)
    torch.testing.assert_close(
        got.metrics["raw_mean"], expected.metrics["raw_mean"], rtol=RTOL, atol=1e-6
    )
    raw = got.scores * NORM.std + NORM.mean  # normalization applied once, as on the HF path
    torch.testing.assert_close(raw.mean(), got.metrics["raw_mean"], rtol=1e-5, atol=1e-6)
    relative = ((got.scores - expected.scores).abs() / expected.scores.abs()).max()
    print(f"scalar scores, vLLM vs HF: max relative difference {float(relative):.2e}")


def test_scalar_scorer_sleeps_between_reward_phases(sources: dict[str, Any]) -> None:
    vllm = sources["scalar_vllm"]
    vllm.offload()
    with pytest.raises(RuntimeError, match="asleep"):
        vllm.score([sample("2+2=", "4")])
    vllm.onload()
    assert vllm.score([]).scores.shape == (0,)


def test_judge_verdicts_on_vllm_equal_hf(sources: dict[str, Any]) -> None:
    hf, vllm = sources["judge_hf"], sources["judge_vllm"]
    assert type(vllm.engine).__name__ == "VllmRolloutEngine"
    samples = [sample("2+2", "good"), sample("2+2", "poor"), sample("3+3", "six, I think")]
    expected, got = hf.score(samples), vllm.score(samples)
    assert vllm.last_verdicts == hf.last_verdicts
    assert hf.last_verdicts[:2] == ["Score: 9/10", "Score: 2/10"]  # what the judge was taught
    assert got.scores.tolist() == expected.scores.tolist()
    torch.testing.assert_close(got.scores[:2], torch.tensor([0.9, 0.2]))
    assert float(got.metrics["verdict_tokens"]) == float(expected.metrics["verdict_tokens"])


def test_vllm_cannot_build_an_unknown_classifier_so_hf_scores_it(tmp_path: Path) -> None:
    from lightrft.adapters.vllm import unsupported_reason

    config = tiny_vllm_config()
    config.num_labels = 1
    config.architectures = ["NoSuchForSequenceClassification"]
    config.save_pretrained(tmp_path)
    reason = unsupported_reason(tmp_path)
    assert reason is not None and "NoSuchForCausalLM" in reason
    with capture_logs() as events:
        assert unsupported_reason(write_scalar_rm(tmp_path / "rm")) is None
    assert not [e for e in events if e["log_level"] == "warning"]
