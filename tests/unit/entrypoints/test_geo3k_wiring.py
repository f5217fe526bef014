"""Geo3K through the wiring: ``data.*.preprocessor=geo3k``, ``lightrft eval --format geo3k``
(auto-detected) and the suite's metrics: accuracy and pass@k with the math answer grader
are 1 for an engine that answers every problem correctly and 0 for one that never does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import pytest
from PIL import Image

from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.hf.multimodal_inputs import EncodedPromptSource, MediaRequirements
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.adapters.rewards import MathAnswerGrader
from lightrft.application.eval_suite import EvalSuite, SuiteParams
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import ROW_FORMATS, build_prompts, placeholders_of
from lightrft.entrypoints.wiring.eval_files import detect_format, eval_file_prompts
from tests.helpers.hf_media_files import write_geo3k_parquet
from tests.helpers.tiny_multimodal import tiny_image_processor, tiny_mm_tokenizer, token_id

VL = MediaRequirements(image_placeholder="<|image_pad|>")
ROWS = [
    ("<image>Find x.", [Image.new("RGB", (40, 30), "red")], "3"),
    ("<image>Find the area.", [Image.new("RGB", (60, 60), "blue")], "2\\sqrt{3}"),
    ("<image>Find the angle.", [Image.new("RGB", (30, 50), "lime")], "60"),
]


class BoxingEngine:
    """Answers each prompt with ``\\boxed{answer(reference)}`` and records what it was given
    (the ``RolloutEngine.generate`` the suite calls)."""

    def __init__(self, answer: dict[str, str] | None = None) -> None:
        self.answer = answer  # reference -> the answer given (None: the reference itself)
        self.prompts: list[PromptRecord] = []

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        self.prompts.extend(prompts)
        out = []
        for index, prompt in enumerate(prompts):
            ref = prompt.reference or ""
            given = ref if self.answer is None else self.answer[ref]
            text = f"The figure gives it: \\boxed{{{given}}}"
            out.extend(Completion(index, (5,), text, "stop") for _ in range(sampling.n))
        return out


def geo3k_eval_source(path: Path) -> EncodedPromptSource:
    tok = tiny_mm_tokenizer()
    prompts = eval_file_prompts(path, "auto", tok, PromptFormat(), placeholders_of(VL))
    return EncodedPromptSource(prompts, VisionLanguageEncoder(tok, tiny_image_processor()))


def test_the_preprocessor_choices_are_the_registry() -> None:
    literal = DatasetConfig.model_fields["preprocessor"].annotation
    assert (
        set(get_args(literal))
        == set(ROW_FORMATS.choices())
        == {"none", "gsm8k", "geo3k", "judge_pairs"}
    )


def test_preprocessor_geo3k_builds_checked_prompts(tmp_path: Path) -> None:
    path = write_geo3k_parquet(tmp_path / "train.parquet", ROWS)
    dataset = DatasetConfig(path=str(path), preprocessor="geo3k", max_samples=2)
    source = build_prompts(dataset, tiny_mm_tokenizer(), VL, "data.train")
    assert source is not None and len(source) == 2
    assert source[1].reference == "2\\sqrt{3}" and "\\boxed{}" in source[1].prompt_text
    assert len(source[0].multimodal["images"]) == 1


def test_geo3k_files_are_detected_and_encoded_for_the_model(tmp_path: Path) -> None:
    path = write_geo3k_parquet(tmp_path / "test.parquet", ROWS)
    assert detect_format(path) == "geo3k"
    source = geo3k_eval_source(path)
    # 40x30 = 1200 pixels < min 3136: scaled by sqrt(3136 / 1200) = 1.617 and rounded up to
    # multiples of 28: 84 x 56 -> 6 x 4 patches of 14 = 24 -> 24 / 2**2 = 6 merged tokens
    first = source[0]
    assert first.multimodal["image_grid_thw"].tolist() == [[1, 4, 6]]
    assert first.prompt_token_ids.count(token_id("<|image_pad|>")) == 6


@pytest.mark.parametrize(
    ("answers", "score"),
    [(None, 1.0), ({"3": "4", "2\\sqrt{3}": "\\sqrt{3}", "60": "30"}, 0.0)],
    ids=["correct", "wrong"],
)
def test_accuracy_and_pass_at_k_of_a_geo3k_file(
    tmp_path: Path, answers: dict[str, str] | None, score: float
) -> None:
    path = write_geo3k_parquet(tmp_path / "test.parquet", ROWS)
    engine = BoxingEngine(answers)
    params = SuiteParams(max_new_tokens=8, n_samples=2, ks=(1, 2), batch_size=2)
    result = EvalSuite(engine, MathAnswerGrader(), params).evaluate("test", geo3k_eval_source(path))
    metrics = result.metrics
    assert metrics["prompts"] == 3
    for name in ("greedy_accuracy", "pass@1", "pass@2", "maj@2", "sample_accuracy"):
        assert metrics[name] == score, name
    assert metrics["greedy_no_answer"] == 0.0
    # the engine got model-ready prompts: pixels and expanded image pads, never raw images
    assert all(
        "pixel_values" in p.multimodal and "images" not in p.multimodal for p in engine.prompts
    )
