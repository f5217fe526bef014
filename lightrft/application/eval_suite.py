"""EvalSuite: greedy accuracy, pass@k and maj@k of a rollout engine on prompt files.

For each prompt file: one greedy completion per prompt (``greedy_accuracy``) and, with
``n_samples > 1`` or a temperature, ``n_samples`` sampled completions per prompt, from which
pass@k (unbiased, :func:`~lightrft.domain.eval_metrics.pass_at_k`) and maj@k (majority vote
of the first k samples, :func:`~lightrft.domain.eval_metrics.maj_at_k`) are averaged over
prompts. Answers are extracted and judged by an ``AnswerGrader``. Per-prompt records keep the
greedy answer and the sampled correct counts for the JSON report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightrft.domain.eval_metrics import GradedAnswer, maj_at_k, pass_at_k
from lightrft.domain.ports import AnswerGrader, PromptSource, RolloutEngine
from lightrft.domain.types import Completion, PromptRecord, SamplingParams


@dataclass(frozen=True)
class SuiteParams:
    """What to generate. ``ks`` apply to the ``n_samples`` sampled completions."""

    max_new_tokens: int = 512
    greedy: bool = True
    n_samples: int = 0  # 0: no sampled pass
    ks: tuple[int, ...] = (1,)
    temperature: float = 1.0
    top_p: float = 1.0
    stop_strings: tuple[str, ...] = ()
    seed: int = 0
    batch_size: int = 32
    max_prompts: int | None = None

    def __post_init__(self) -> None:
        if not self.greedy and self.n_samples == 0:
            raise ValueError("nothing to evaluate: greedy is off and n_samples is 0")
        if self.n_samples and any(not 0 < k <= self.n_samples for k in self.ks):
            raise ValueError(f"every k must be in [1, n_samples={self.n_samples}], got {self.ks}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


@dataclass(frozen=True)
class FileResult:
    """Metrics of one prompt file and one record per prompt."""

    name: str
    metrics: dict[str, float]
    records: list[dict[str, Any]] = field(default_factory=list)


class EvalSuite:
    """Evaluates ``engine`` (awake) on prompt sources; ``on_prompts(n)`` reports progress."""

    def __init__(
        self,
        engine: RolloutEngine,
        grader: AnswerGrader,
        params: SuiteParams,
        on_prompts: Callable[[int], None] | None = None,
    ) -> None:
        self.engine, self.grader, self.params = engine, grader, params
        self.on_prompts = on_prompts or (lambda n: None)

    def evaluate(self, name: str, prompts: PromptSource) -> FileResult:
        """Metrics of ``prompts`` (the first ``max_prompts``)."""
        p = self.params
        count = len(prompts) if p.max_prompts is None else min(p.max_prompts, len(prompts))
        if count == 0:
            raise ValueError(f"{name}: no prompts to evaluate")
        records: list[dict[str, Any]] = []
        for start in range(0, count, p.batch_size):
            batch = [prompts[i] for i in range(start, min(count, start + p.batch_size))]
            records.extend(self._batch_records(batch))
            self.on_prompts(len(batch))
        return FileResult(name, self._metrics(records), records)

    def _batch_records(self, batch: list[PromptRecord]) -> list[dict[str, Any]]:
        p = self.params
        records: list[dict[str, Any]] = [{"uid": r.uid, "reference": r.reference} for r in batch]
        if p.greedy:
            greedy = SamplingParams(
                n=1, temperature=0.0, max_new_tokens=p.max_new_tokens, stop_strings=p.stop_strings
            )
            for record, prompt, [c] in zip(
                records, batch, self._generate(batch, greedy), strict=True
            ):
                graded = self._grade(prompt, c)
                record.update(
                    greedy_response=c.text,
                    greedy_answer=graded.key,
                    greedy_correct=bool(graded.correct),
                    greedy_tokens=len(c.token_ids),
                    greedy_finish=c.finish_reason,
                )
        if p.n_samples:
            sampled = SamplingParams(
                n=p.n_samples,
                temperature=p.temperature,
                top_p=p.top_p,
                max_new_tokens=p.max_new_tokens,
                stop_strings=p.stop_strings,
                seed=p.seed,
            )
            for record, prompt, group in zip(
                records, batch, self._generate(batch, sampled), strict=True
            ):
                grades = [self._grade(prompt, c) for c in group]
                record.update(
                    sample_answers=[g.key for g in grades],
                    sample_correct=[bool(g.correct) for g in grades],
                    sample_tokens=sum(len(c.token_ids) for c in group) / len(group),
                )
        return records

    def _generate(
        self, batch: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[list[Completion]]:
        completions = self.engine.generate(batch, sampling)
        n = sampling.n
        if len(completions) != len(batch) * n:
            raise ValueError(f"engine returned {len(completions)} completions for {len(batch)}x{n}")
        return [completions[i * n : (i + 1) * n] for i in range(len(batch))]

    def _grade(self, prompt: PromptRecord, completion: Completion) -> GradedAnswer:
        if prompt.reference is None:
            raise ValueError(f"prompt {prompt.uid!r} has no reference answer to evaluate against")
        return self.grader.grade(completion.text, prompt.reference)

    def _metrics(self, records: list[dict[str, Any]]) -> dict[str, float]:
        p = self.params
        n_prompts = len(records)
        metrics: dict[str, float] = {"prompts": float(n_prompts)}
        if p.greedy:
            metrics["greedy_accuracy"] = sum(r["greedy_correct"] for r in records) / n_prompts
            metrics["greedy_no_answer"] = (
                sum(r["greedy_answer"] is None for r in records) / n_prompts
            )
            metrics["greedy_tokens"] = sum(r["greedy_tokens"] for r in records) / n_prompts
            metrics["greedy_truncated"] = (
                sum(r["greedy_finish"] == "length" for r in records) / n_prompts
            )
        if p.n_samples:
            n = p.n_samples
            for k in p.ks:
                metrics[f"pass@{k}"] = (
                    sum(pass_at_k(n, sum(r["sample_correct"]), k) for r in records) / n_prompts
                )
                metrics[f"maj@{k}"] = (
                    sum(maj_at_k(r["sample_answers"], r["sample_correct"], k) for r in records)
                    / n_prompts
                )
            metrics["sample_accuracy"] = (
                sum(sum(r["sample_correct"]) / n for r in records) / n_prompts
            )
            metrics["sample_tokens"] = sum(r["sample_tokens"] for r in records) / n_prompts
        return metrics
