"""Rejection sampling keeps exactly the judgements whose verdict reaches the label."""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.application.rejection_sampling import rejection_sample
from lightrft.domain.types import Completion, PromptRecord, SamplingParams


class CyclingJudge:
    """Answers the k-th completion of a call with ``texts[k % len(texts)]``."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts, self.calls = list(texts), 0

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        self.calls += 1
        out = []
        for i in range(len(prompts)):
            for j in range(sampling.n):
                k = i * sampling.n + j
                out.append(Completion(i, (1,), self.texts[k % len(self.texts)], "stop"))
        return out


def test_keeps_the_matching_verdicts_per_prompt() -> None:
    prompts = [PromptRecord(f"p{i}", "x", (1,), reference=ref) for i, ref in enumerate("ABAB")]
    engine = CyclingJudge(["[[A]]", "[[B]]", "none", "[[A]]"])  # n=3: prompts see shifted cycles
    result = rejection_sample(
        engine, prompts, SamplingParams(n=3), lambda t, ref: t == f"[[{ref}]]", batch_size=3
    )
    # batch 1 (prompts 0-2), k = 0..8: A B none | A A B | none A A ; batch 2 (prompt 3): A B none
    assert [(k.prompt_index, k.sample_index, k.text) for k in result.kept] == [
        (0, 0, "[[A]]"),
        (1, 2, "[[B]]"),
        (2, 1, "[[A]]"),
        (2, 2, "[[A]]"),
        (3, 1, "[[B]]"),
    ]
    assert result.kept_per_prompt == (1, 1, 2, 1) and engine.calls == 2
    assert result.acceptance_rate == 5 / 12 and result.prompts_with_a_kept_judgement == 4
    capped = rejection_sample(
        CyclingJudge(["[[A]]", "[[B]]", "none", "[[A]]"]),
        prompts,
        SamplingParams(n=3),
        lambda t, ref: t == f"[[{ref}]]",
        batch_size=3,
        max_kept_per_prompt=1,
    )
    assert capped.kept_per_prompt == (1, 1, 1, 1)
