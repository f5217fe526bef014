"""``PythonFunctionReward``: a user's own reward function, run safely.

B samples. The function is named ``"package.module:function"`` or ``"path/file.py:function"``
and called by its ``convention``
(:mod:`~lightrft.adapters.rewards.calling_conventions`): by default
``fn(prompt: str, response: str, reference: str | None) -> float`` per sample, with the
rendered prompt text, the completion text and the prompt's reference; or as verl's
``compute_score``, a TRL reward function or an OpenRLHF ``reward_func`` expect. It runs in one
persistent worker process (:class:`~lightrft.adapters.rewards.function_worker.FunctionWorker`),
so a call that hangs is killed at ``timeout_seconds`` and the worker restarts for the next
call; an exception, a non-finite or non-numeric value, a timeout or a crashed worker gives
the samples of that call ``failure_score`` (one sample, or the batch for the batched
conventions), is logged and counted, and the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import structlog
import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.adapters.rewards.calling_conventions import CONVENTIONS, Call, function_target
from lightrft.adapters.rewards.failure_log import FailureLog
from lightrft.adapters.rewards.function_worker import (
    FunctionWorker,
    WorkerCallError,
    WorkerTimeout,
)
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)


class PythonFunctionReward(RuleSource):
    """``RewardSource`` calling ``function`` (``"module:function"``, ``"file.py:function"``)
    by its ``convention`` (``lightrft``, ``verl``, ``trl``, ``openrlhf``).

    Metrics: ``failures`` (samples that got ``failure_score``, timeouts included),
    ``timeouts`` (samples of calls cut off), ``worker_restarts`` (cumulative), and an OpenRLHF
    function's ``extra_logs`` as ``extra_<name>``. The worker starts in the constructor, so a
    function that cannot be imported fails at once with ``ImportError``.
    """

    def __init__(
        self,
        function: str,
        *,
        name: str | None = None,
        timeout_seconds: float = 10.0,
        failure_score: float = 0.0,
        start_timeout_seconds: float = 60.0,
        convention: str = "lightrft",
    ) -> None:
        if not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        if not math.isfinite(failure_score):
            raise ValueError(f"failure_score must be finite, got {failure_score}")
        if convention not in CONVENTIONS:
            raise ValueError(
                f"unknown calling convention {convention!r}; choices: {', '.join(CONVENTIONS)}"
            )
        self.convention = CONVENTIONS[convention]
        self.function = function_target(function, self.convention)
        self._name = name if name is not None else self.function.rpartition(":")[2]
        self.timeout_seconds = timeout_seconds
        self.failure_score = failure_score
        self._worker = FunctionWorker(self.function, start_timeout=start_timeout_seconds)
        self._worker.start()

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 in order: one call of the function per sample, or one per
        batch (conventions ``trl``, ``openrlhf``).

        Failed samples are logged rate-limited (:class:`FailureLog`: a few one by one, then
        one summary line per call).
        """
        values = [self.failure_score] * len(samples)
        failures = FailureLog("reward.function", self.name)
        extra: dict[str, list[float]] = {}
        for call in self.convention.calls(samples):
            uids = [samples[row].prompt.uid for row in call.rows]
            for row, value in zip(call.rows, self._call(call, uids, failures, extra), strict=True):
                if value is not None:
                    values[row] = value
        failures.summarize(len(samples))
        metrics = {
            "failures": torch.tensor(float(failures.total)),
            "timeouts": torch.tensor(float(failures.by_kind["timeout"])),
            "worker_restarts": torch.tensor(float(self._worker.restarts)),
        }
        metrics |= {name: torch.tensor(sum(v) / len(v)) for name, v in extra.items()}
        return RewardResult(scores=torch.tensor(values, dtype=torch.float32), metrics=metrics)

    def _call(
        self, call: Call, uids: list[str], failures: FailureLog, extra: dict[str, list[float]]
    ) -> list[float | None]:
        """The call's per-sample scores; None where a sample failed (recorded)."""
        count = len(call.rows)
        uid = uids[0] if count == 1 else f"{count} samples from {uids[0]}"
        try:
            value = self._worker.call(call.args, self.timeout_seconds, call.kwargs)
        except WorkerTimeout:
            failures.record(
                "timeout",
                count=count,
                function=self.function,
                uid=uid,
                timeout_seconds=self.timeout_seconds,
            )
            return [None] * count
        except (WorkerCallError, ImportError, TimeoutError) as error:
            failures.record(
                "failed", count=count, function=self.function, uid=uid, error=str(error)
            )
            return [None] * count
        try:
            raw, metrics = self.convention.values(value, count)
        except ValueError as error:
            failures.record(
                "bad_value", count=count, function=self.function, uid=uid, error=str(error),
                value=short_repr(value),
            )  # fmt: skip
            return [None] * count
        for name, number in metrics.items():
            extra.setdefault(name, []).append(number)
        scores = [finite_score(item) for item in raw]
        for item, score, sample_uid in zip(raw, scores, uids, strict=True):
            if score is None:
                kind = "none" if item is None else "bad_value"
                failures.record(
                    kind, function=self.function, uid=sample_uid, value=short_repr(item)
                )
        return scores

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
