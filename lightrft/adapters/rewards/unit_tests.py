"""``UnitTestsReward``: runs a response's code against the prompt's tests, sandboxed.

B samples. The program is the response's code followed by the tests: the code is the last
fenced block of the response (```` ```python ... ``` ```` or a bare ```` ``` ````), or the
whole response when it has none; the tests are the prompt's ``reference`` (e.g. lines of
``assert f(2) == 4``). A sample scores ``pass_score`` when the program exits cleanly, else
``fail_score``. Programs run in fresh sandboxed processes
(:mod:`~lightrft.adapters.rewards.code_sandbox`: time and memory limits, no network, no
processes, a temporary directory, a minimal environment) started from one persistent
:class:`~lightrft.adapters.rewards.function_worker.FunctionWorker` process, so the trainer's
process never forks. Metrics: ``pass_rate`` and the fractions that ``timeout``, ran out of
``memory``, were ``blocked`` by the sandbox, or could not run (``no_tests``,
``worker_failures``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import structlog
import torch

from lightrft.adapters.rewards.function_worker import FunctionWorker, WorkerCallError, WorkerTimeout
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_OUTCOMES = ("passed", "failed", "timeout", "memory", "blocked")


def extract_code(response: str) -> str:
    """The last fenced code block of ``response``, or all of it without a fence."""
    blocks = _FENCE.findall(response)
    return blocks[-1] if blocks else response


class UnitTestsReward:
    """``RewardSource`` running code against tests (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str = "unit_tests",
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        pass_score: float = 1.0,
        fail_score: float = 0.0,
    ) -> None:
        if not timeout_s > 0 or memory_mb < 16:
            raise ValueError("timeout_s must be > 0 and memory_mb >= 16")
        if not (math.isfinite(pass_score) and math.isfinite(fail_score)):
            raise ValueError("pass_score and fail_score must be finite")
        self._name = name
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self.pass_score, self.fail_score = pass_score, fail_score
        self._worker = FunctionWorker("lightrft.adapters.rewards.code_sandbox:run_programs")
        self._worker.start()

    @property
    def name(self) -> str:
        return self._name

    def outcomes(self, samples: Sequence[RewardSample]) -> list[str]:
        """One outcome per sample: passed, failed, timeout, memory, blocked, no_tests or
        worker_failure."""
        programs: dict[int, str] = {}
        result = ["no_tests"] * len(samples)
        for i, sample in enumerate(samples):
            tests = sample.prompt.reference
            if tests and tests.strip():
                programs[i] = f"{extract_code(sample.completion.text)}\n\n{tests}\n"
        if not programs:
            return result
        budget = len(programs) * (self.timeout_s + 5.0) + 30.0
        try:
            runs = self._worker.call(
                (list(programs.values()), self.timeout_s, self.memory_mb), timeout=budget
            )
        except (WorkerTimeout, WorkerCallError) as error:
            log.warning("reward.unit_tests.worker_failed", error=str(error))
            for i in programs:
                result[i] = "worker_failure"
            return result
        for i, run in zip(programs, runs, strict=True):
            result[i] = run["outcome"]
        return result

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
            for o in (*_OUTCOMES, "no_tests", "worker_failure")
        }
        return RewardResult(scores, metrics)

    def onload(self) -> None:
        """No weights: nothing to do."""

    def offload(self) -> None:
        """No weights: nothing to do."""

    def close(self) -> None:
        """Stops the worker process."""
        self._worker.close()
