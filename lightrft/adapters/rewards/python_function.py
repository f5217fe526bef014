"""``PythonFunctionReward``: a user's own reward function, run safely.

B samples. The function is named ``"package.module:function"`` and called as
``fn(prompt: str, response: str, reference: str | None) -> float`` with the rendered prompt
text, the completion text and the prompt's reference. It runs in one persistent worker
process (:class:`~lightrft.adapters.rewards.function_worker.FunctionWorker`), so a call that
hangs is killed at ``timeout_seconds`` and the worker restarts for the next call; an
exception, a non-finite or non-numeric value, a timeout or a crashed worker gives that sample
``failure_score``, is logged and counted, and the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import structlog
import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.adapters.rewards.failure_log import FailureLog
from lightrft.adapters.rewards.function_worker import (
    FunctionWorker,
    WorkerCallError,
    WorkerTimeout,
)
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)


class PythonFunctionReward(RuleSource):
    """``RewardSource`` calling ``function`` (``"module:function"``) per sample.

    Metrics: ``failures`` (samples that got ``failure_score``, timeouts included),
    ``timeouts`` (calls cut off), ``worker_restarts`` (cumulative). The worker starts in the
    constructor, so a function that cannot be imported fails at once with ``ImportError``.
    """

    def __init__(
        self,
        function: str,
        *,
        name: str | None = None,
        timeout_seconds: float = 10.0,
        failure_score: float = 0.0,
        start_timeout_seconds: float = 60.0,
    ) -> None:
        if not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        if not math.isfinite(failure_score):
            raise ValueError(f"failure_score must be finite, got {failure_score}")
        self.function = function
        self._name = name if name is not None else function.rpartition(":")[2]
        self.timeout_seconds = timeout_seconds
        self.failure_score = failure_score
        self._worker = FunctionWorker(function, start_timeout=start_timeout_seconds)
        self._worker.start()

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32, one call of the function per sample, in order.

        Failed samples are logged rate-limited (:class:`FailureLog`: a few one by one, then
        one summary line per call).
        """
        values: list[float] = []
        failures = FailureLog("reward.function", self.name)
        for sample in samples:
            value = self._call(sample, failures)
            values.append(self.failure_score if value is None else value)
        failures.summarize(len(samples))
        metrics = {
            "failures": torch.tensor(float(failures.total)),
            "timeouts": torch.tensor(float(failures.by_kind["timeout"])),
            "worker_restarts": torch.tensor(float(self._worker.restarts)),
        }
        return RewardResult(scores=torch.tensor(values, dtype=torch.float32), metrics=metrics)

    def _call(self, sample: RewardSample, failures: FailureLog) -> float | None:
        """The function's value, or None after recording why it failed."""
        args = (sample.prompt.prompt_text, sample.completion.text, sample.prompt.reference)
        uid = sample.prompt.uid
        try:
            value = self._worker.call(args, timeout=self.timeout_seconds)
        except WorkerTimeout:
            failures.record(
                "timeout", function=self.function, uid=uid, timeout_seconds=self.timeout_seconds
            )
            return None
        except (WorkerCallError, ImportError, TimeoutError) as error:
            failures.record("failed", function=self.function, uid=uid, error=str(error))
            return None
        score = finite_score(value)
        if score is None:
            failures.record("bad_value", function=self.function, uid=uid, value=short_repr(value))
        return score

    def close(self) -> None:
        """Stops the worker process."""
        self._worker.close()


def finite_score(value: object) -> float | None:
    """``value`` as a finite float, or ``None`` for a non-number, NaN, an infinity, or a
    number too large for a float (``10**400``). Bools count as 1 / 0."""
    if not isinstance(value, Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return number if math.isfinite(number) else None


def short_repr(value: object, limit: int = 80) -> str:
    """The first ``limit`` characters of ``repr(value)`` (an int too long to print: its type
    and size)."""
    try:
        return repr(value)[:limit]
    except ValueError:  # an int past sys.get_int_max_str_digits()
        bits = value.bit_length() if isinstance(value, int) else 0
        return f"<{type(value).__name__} of {bits} bits>"
