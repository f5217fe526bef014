"""``UnitTestsReward``: runs a response's code against the prompt's tests, sandboxed.

B samples. The program is the response's code followed by the tests: the code is the last
fenced block of the response (```` ```python ... ``` ```` or a bare ```` ``` ````), or the
whole response when it has none; the tests are the prompt's ``reference`` (e.g. lines of
``assert f(2) == 4``). A sample scores ``pass_score`` when the program exits cleanly, else
``fail_score``. Each program runs in a fresh process behind the
:class:`~lightrft.domain.ports.CodeSandbox` given to the constructor (the product's one is
:func:`lightrft.adapters.sandbox.open_sandbox`: Linux namespaces, a read-only view of the
interpreter, no network, resource limits, a seccomp filter). Metrics: ``pass_rate`` and the
fractions that ``failed``, hit the ``timeout``, ran out of ``memory``, were ``blocked`` by the
in-sandbox guard, met a ``sandbox_error`` (the sandbox, not the program, failed) or had
``no_tests``.

Programs run in parallel, at most ``max_parallel`` at once (default ``min(4, CPUs)``), each
still in its own sandboxed, time-limited process: the programs of one batch, and those of
concurrent calls (the reward service scores up to ``parallel_calls`` batches at once) share
one bound, so B looping programs cost about ``B / max_parallel`` times ``timeout_s``, not B
times.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import structlog
import torch

from lightrft.adapters.reward_parts.source_bases import RuleSource
from lightrft.domain.ports import CodeSandbox
from lightrft.domain.sandbox import OUTCOMES, SandboxLimits
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def default_parallelism() -> int:
    """``min(4, CPUs)``: programs run at once when ``max_parallel`` is not given."""
    return max(1, min(4, os.cpu_count() or 1))


def extract_code(response: str) -> str:
    """The last fenced code block of ``response``, or all of it without a fence."""
    blocks = _FENCE.findall(response)
    return blocks[-1] if blocks else response


class UnitTestsReward(RuleSource):
    """``RewardSource`` running code against tests (see the module docstring)."""

    def __init__(
        self,
        sandbox: CodeSandbox,
        *,
        name: str = "unit_tests",
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        pass_score: float = 1.0,
        fail_score: float = 0.0,
        max_parallel: int | None = None,
    ) -> None:
        if not timeout_s > 0 or memory_mb < 16:
            raise ValueError("timeout_s must be > 0 and memory_mb >= 16")
        if max_parallel is not None and max_parallel < 1:
            raise ValueError(f"max_parallel must be >= 1, got {max_parallel}")
        if not (math.isfinite(pass_score) and math.isfinite(fail_score)):
            raise ValueError("pass_score and fail_score must be finite")
        self._name = name
        self.sandbox = sandbox
        self.limits = SandboxLimits(wall_s=timeout_s, memory_mb=memory_mb)
        self.pass_score, self.fail_score = pass_score, fail_score
        self.max_parallel = max_parallel or default_parallelism()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def parallel_calls(self) -> int:
        """How many ``score`` calls may run at once (they share the ``max_parallel`` bound)."""
        return self.max_parallel

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_parallel, "unit-tests")
            return self._pool

    def outcomes(self, samples: Sequence[RewardSample]) -> list[str]:
        """One outcome per sample: an :data:`~lightrft.domain.sandbox.OUTCOMES` value, or
        ``no_tests``."""
        return list(self._workers().map(self._outcome, samples))

    def _outcome(self, sample: RewardSample) -> str:
        tests = sample.prompt.reference
        if not (tests and tests.strip()):
            return "no_tests"
        program = f"{extract_code(sample.completion.text)}\n\n{tests}\n"
        run = self.sandbox.run(program, limits=self.limits)
        if run.outcome == "sandbox_error":
            log.warning("reward.unit_tests.sandbox_error", error=run.stderr[-500:])
        return run.outcome

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32: ``pass_score`` for passing programs, else ``fail_score``."""
        outcomes = self.outcomes(samples)
        scores = torch.tensor(
            [self.pass_score if o == "passed" else self.fail_score for o in outcomes],
            dtype=torch.float32,
        )
        n = max(len(outcomes), 1)
        metrics = {
            ("pass_rate" if o == "passed" else o): torch.tensor(outcomes.count(o) / n)
            for o in (*OUTCOMES, "no_tests")
        }
        return RewardResult(scores, metrics)

    def close(self) -> None:
        """Stops the worker threads (every program ran in its own process)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
