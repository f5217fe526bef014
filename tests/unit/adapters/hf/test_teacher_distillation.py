"""On-policy distillation on tiny random Llamas: the ``opd`` advantage equals the teacher's
minus the student's log-prob of each sampled token, both computed here independently (each
row alone, unpadded); a teacher with another tokenizer is refused, naming both paths."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import LlamaForCausalLM

from lightrft.adapters.hf import HfPolicy, HfReferenceModel
from lightrft.adapters.hf.tokenizer_match import check_same_tokenizer, tokenizer_difference
from lightrft.domain.advantages import AdvantageInputs, compute_advantages
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.container import Container
from tests.unit.adapters.hf.hf_tiny import (
    PROMPTS,
    RESPONSES,
    make_batch,
    tiny_model,
    tiny_tokenizer,
)

CPU = torch.device("cpu")


def _row_logprobs(model: LlamaForCausalLM, prompt: list[int], response: list[int]) -> torch.Tensor:
    """log p(response_t | prompt, response_<t) for one unpadded row. Shape: (len(response),)."""
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()  # [P + R, V]
    logprobs = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)  # predicts response
    return logprobs.gather(-1, torch.tensor(response).unsqueeze(-1)).squeeze(-1)


def test_the_opd_advantage_is_teacher_minus_student_logprob_on_tiny_llamas() -> None:
    batch = make_batch(PROMPTS, RESPONSES)
    student_model, teacher_model = tiny_model(seed=0), tiny_model(seed=1)
    student = HfPolicy(tiny_model(seed=0))
    teacher = HfReferenceModel(tiny_model(seed=1), CPU)
    with torch.no_grad():
        student_lp = student.forward(batch).logprobs
    teacher_lp = teacher.forward(batch).logprobs
    out = compute_advantages(
        "opd",
        AdvantageInputs(
            rewards=torch.zeros(3),
            response_mask=batch.response_mask,
            group_index=torch.arange(3),
            logprobs=student_lp,
            teacher_logprobs=teacher_lp.unsqueeze(0),
        ),
    )
    for i, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        want = _row_logprobs(teacher_model, prompt, response) - _row_logprobs(
            student_model, prompt, response
        )
        torch.testing.assert_close(out.advantages[i, : len(response)], want, atol=1e-5, rtol=1e-4)
        assert bool((out.advantages[i, len(response) :] == 0).all())
    assert bool((out.advantages != 0).any())  # different random models disagree


def test_tokenizers_with_other_ids_are_told_apart() -> None:
    assert tokenizer_difference(tiny_tokenizer(), tiny_tokenizer()) is None
    other = tiny_tokenizer()
    other.add_tokens(["<extra>"])
    assert "vocabulary size" in str(tokenizer_difference(tiny_tokenizer(), other))
    with pytest.raises(ValueError, match="teacher /t uses another tokenizer than the student /s"):
        check_same_tokenizer(tiny_tokenizer(), other, "/s", "/t")


def _save(path: Path, seed: int, extra_token: bool = False) -> Path:
    tiny_model(seed=seed).save_pretrained(path)
    tokenizer = tiny_tokenizer()
    if extra_token:
        tokenizer.add_special_tokens({"eos_token": "<end>"})
    tokenizer.save_pretrained(path)
    return path


def test_a_teacher_with_another_tokenizer_is_refused_naming_both_paths(tmp_path: Path) -> None:
    student = _save(tmp_path / "student", 0)
    good, bad = _save(tmp_path / "teacher", 1), _save(tmp_path / "other", 2, extra_token=True)
    overrides = [f"model.path={student}", "algorithm.advantage_estimator=opd"]
    config = load_config(None, [*overrides, f"teacher.models=[{{path: {good}, weight: 3}}]"])
    teachers = Container(config=config).teachers()
    assert len(teachers) == 1
    config = load_config(None, [*overrides, f"teacher.path={bad}"])
    with pytest.raises(
        ValueError, match=f"teacher {bad} uses another tokenizer than the student {student}"
    ):
        Container(config=config).teachers()
