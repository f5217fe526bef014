"""``MathAnswerReward``: 1 for a response whose final answer equals the reference, else 0.

B samples. The answer is extracted from the response text only (extractors in a configured
order, see :mod:`answer_extraction`), the reference's answer part is taken from
``PromptRecord.reference`` (after ``####`` for GSM8K), and the two are compared exactly as
numbers or symbolically with math-verify (:mod:`answer_equivalence`). Model output is never
evaluated as code.

math-verify bounds its own time with ``signal.alarm``, which only works in the main thread.
``isolation="auto"`` checks in-process when called from the main thread and otherwise in a
persistent worker process (whose main thread can use the alarm, and which is killed if even
that overruns); ``"process"`` always uses the worker; ``"in_process"`` never does (off the
main thread the math-verify timeouts are then disabled, with a warning).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Literal

import structlog
import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.adapters.rewards import answer_check
from lightrft.adapters.rewards.answer_check import check_response
from lightrft.adapters.rewards.answer_equivalence import AnswerCheck, Verdict
from lightrft.adapters.rewards.answer_extraction import ANSWER_EXTRACTORS, DEFAULT_EXTRACTORS
from lightrft.adapters.rewards.function_worker import FunctionWorker, WorkerCallError
from lightrft.domain.registry import UnknownChoiceError
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

Isolation = Literal["auto", "in_process", "process"]
_CHECK_TARGET = f"{answer_check.__name__}:check_response"


def _check_extractors(extractors: Sequence[str]) -> None:
    """Refuses an empty list or a name that :data:`ANSWER_EXTRACTORS` does not hold."""
    if isinstance(extractors, str) or not extractors:
        raise ValueError(
            f"extractors must be a non-empty list of answer extractor names, got {extractors!r}; "
            f"valid names: {', '.join(ANSWER_EXTRACTORS.choices())}"
        )
    unknown = [name for name in extractors if name not in ANSWER_EXTRACTORS]
    if unknown:
        raise UnknownChoiceError(
            f"extractors: unknown answer extractor {unknown[0]!r}; "
            f"valid choices: {', '.join(ANSWER_EXTRACTORS.choices())}"
        )


class MathAnswerReward(RuleSource):
    """``RewardSource`` for verifiable math answers (GSM8K, MATH, arithmetic).

    ``extractors``: names of :data:`ANSWER_EXTRACTORS` tried in order on the response; the
    first answer found is checked (default :data:`DEFAULT_EXTRACTORS`: ``gsm8k``, ``boxed``,
    ``answer_is``, ``last_number``). An empty list or an unknown name is a ``ValueError``.
    Scores: ``correct_score`` / ``incorrect_score`` / ``unparseable_score`` (no answer found).
    Metrics: ``accuracy``, ``parse_failure_rate``, ``timeouts`` and ``too_costly`` (counts;
    the latter: answers or references refused unchecked, :mod:`answer_cost`).
    """

    def __init__(
        self,
        *,
        name: str = "math",
        extractors: Sequence[str] = DEFAULT_EXTRACTORS,
        correct_score: float = 1.0,
        incorrect_score: float = 0.0,
        unparseable_score: float = 0.0,
        timeout_seconds: int = 5,
        max_answer_chars: int = 512,
        isolation: Isolation = "auto",
    ) -> None:
        _check_extractors(extractors)
        if timeout_seconds < 1 or int(timeout_seconds) != timeout_seconds:
            raise ValueError(f"timeout_seconds must be a whole number >= 1, got {timeout_seconds}")
        if isolation not in ("auto", "in_process", "process"):
            raise ValueError(f"isolation must be auto, in_process or process, got {isolation!r}")
        for label, value in (
            ("correct_score", correct_score),
            ("incorrect_score", incorrect_score),
            ("unparseable_score", unparseable_score),
        ):
            if not math.isfinite(value):
                raise ValueError(f"{label} must be finite, got {value}")
        self._name = name
        self.extractors = tuple(extractors)
        self.scores: dict[Verdict, float] = {
            "correct": correct_score,
            "incorrect": incorrect_score,
            "unparseable": unparseable_score,
        }
        self.timeout_seconds = int(timeout_seconds)
        self.max_answer_chars = max_answer_chars
        self.isolation = isolation
        self._worker: FunctionWorker | None = None
        self._warned_no_timeout = False

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 and metrics for ``samples``; each needs a reference."""
        in_main = threading.current_thread() is threading.main_thread()
        use_worker = self.isolation == "process" or (self.isolation == "auto" and not in_main)
        checks = [self._check(sample, use_worker, in_main) for sample in samples]
        scores = torch.tensor([self.scores[c.verdict] for c in checks], dtype=torch.float32)
        count = max(len(checks), 1)
        correct = sum(c.verdict == "correct" for c in checks)
        unparseable = sum(c.verdict == "unparseable" for c in checks)
        metrics = {
            "accuracy": torch.tensor(correct / count),
            "parse_failure_rate": torch.tensor(unparseable / count),
            "timeouts": torch.tensor(float(sum(c.timed_out for c in checks))),
            "too_costly": torch.tensor(float(sum(c.too_costly for c in checks))),
        }
        return RewardResult(scores=scores, metrics=metrics)

    def _check(self, sample: RewardSample, use_worker: bool, in_main: bool) -> AnswerCheck:
        reference = sample.prompt.reference
        if reference is None:
            raise ValueError(f"prompt {sample.prompt.uid!r} has no reference answer to check")
        response = sample.completion.text
        if not use_worker:
            timeout: int | None = self.timeout_seconds if in_main else None
            if timeout is None and not self._warned_no_timeout:
                log.warning("reward.math.timeout_disabled", reason="not in the main thread")
                self._warned_no_timeout = True
            return check_response(
                response, reference, self.extractors, timeout, self.max_answer_chars
            )
        if self._worker is None:
            self._worker = FunctionWorker(_CHECK_TARGET)
        args = (response, reference, self.extractors, self.timeout_seconds, self.max_answer_chars)
        try:
            return AnswerCheck(*self._worker.call(args, timeout=6 * self.timeout_seconds + 5))
        except (TimeoutError, WorkerCallError) as error:
            log.warning("reward.math.check_failed", uid=sample.prompt.uid, error=str(error))
            return AnswerCheck("incorrect", timed_out=isinstance(error, TimeoutError))

    def close(self) -> None:
        """Stops the worker process, if one was started."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
