"""Values of the code sandbox port (:class:`~lightrft.domain.ports.CodeSandbox`).

A program (Python source text) runs with ``SandboxLimits`` and comes back as a
``SandboxResult``. The outcome says how it ended:

- ``passed``: exit status 0; ``failed``: any other exit (an exception, a failing ``assert``);
- ``timeout``: the wall-clock or CPU limit ended it; ``memory``: it ran out of address space;
- ``blocked``: the in-process guard (an extra layer inside the sandbox) refused something;
- ``sandbox_error``: the sandbox itself could not start the program (not the program's fault).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["passed", "failed", "timeout", "memory", "blocked", "sandbox_error"]
OUTCOMES: tuple[Outcome, ...] = (
    "passed",
    "failed",
    "timeout",
    "memory",
    "blocked",
    "sandbox_error",
)


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one run. Resource limits hold per process of the run (``RLIMIT_*``), except
    ``processes`` (all processes and threads of the run) and ``disk_mb`` (per writable
    directory, ``/sandbox`` and ``/tmp``)."""

    wall_s: float = 5.0
    cpu_s: int | None = None  # None: ceil(wall_s) + 1
    memory_mb: int = 512
    file_mb: int = 16
    disk_mb: int = 64
    processes: int = 32
    open_files: int = 64
    output_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        if not (math.isfinite(self.wall_s) and self.wall_s > 0):
            raise ValueError(f"SandboxLimits.wall_s must be a finite number > 0, got {self.wall_s}")
        if self.cpu_s is not None and self.cpu_s < 1:
            raise ValueError(f"SandboxLimits.cpu_s must be >= 1, got {self.cpu_s}")
        minimum = {"memory_mb": 16, "file_mb": 1, "disk_mb": 1, "processes": 1}
        minimum |= {"open_files": 8, "output_bytes": 1}
        for field, least in minimum.items():
            if getattr(self, field) < least:
                raise ValueError(
                    f"SandboxLimits.{field} must be >= {least}, got {getattr(self, field)}"
                )

    @property
    def cpu_seconds(self) -> int:
        """The CPU-time limit in whole seconds."""
        return self.cpu_s if self.cpu_s is not None else math.ceil(self.wall_s) + 1


@dataclass(frozen=True)
class SandboxResult:
    """How a run ended. ``stdout``/``stderr`` keep their last ``output_bytes`` bytes
    (decoded, invalid UTF-8 replaced); ``truncated`` says whether bytes were dropped."""

    outcome: Outcome
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    truncated: bool = False
