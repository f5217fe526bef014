"""Running untrusted code against tests in a fresh, limited subprocess.

Standard library only: this module is the target that the unit-tests reward's
:class:`~lightrft.adapters.rewards.function_worker.FunctionWorker` process calls, and that
process spawns one sandboxed child per program:

- ``python -I`` (no user site, no environment variables read) on
  :mod:`~lightrft.adapters.rewards.sandbox_runner`, which installs an audit-hook guard (no
  network, no processes, no files outside the temporary directory) before running the code;
- a fresh temporary directory as the working directory, deleted afterwards;
- a minimal environment (``PATH``, ``HOME`` = the temporary directory, ``LANG``);
- resource limits (``setrlimit``, in the child before it starts): address space
  (``memory_mb``), CPU seconds, file size, open files, no core dumps;
- its own session (process group), killed whole after ``timeout_s`` of wall time.

The outcome is one of ``passed``, ``failed`` (a test failed or the code raised),
``timeout``, ``memory`` (a ``MemoryError``), ``blocked`` (the guard refused something).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).resolve().with_name("sandbox_runner.py")


def _limits(memory_mb: int, cpu_s: int) -> None:
    """Runs in the child between fork and exec."""
    memory = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 2**20, 16 * 2**20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _outcome(returncode: int, stderr: str) -> str:
    if returncode == 0:
        return "passed"
    if "PermissionError: sandbox:" in stderr:
        return "blocked"
    if "MemoryError" in stderr or returncode == -signal.SIGKILL and not stderr:
        return "memory"
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return "timeout"
    return "failed"


def run_program(program: str, timeout_s: float = 5.0, memory_mb: int = 512) -> dict[str, Any]:
    """Runs ``program`` (source text) sandboxed; returns ``{"outcome", "returncode",
    "stdout", "stderr"}`` (outputs cut to their last 2000 characters)."""
    with tempfile.TemporaryDirectory(prefix="lightrft-sandbox-") as workdir:
        program_file = Path(workdir) / "solution.py"
        program_file.write_text(program, encoding="utf-8")
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8"}
        proc = subprocess.Popen(
            [sys.executable, "-I", "-B", str(RUNNER), str(program_file)],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=lambda: _limits(memory_mb, max(1, int(timeout_s) + 1)),  # noqa: PLW1509
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
            outcome = _outcome(proc.returncode, stderr.decode(errors="replace"))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            outcome = "timeout"
    return {
        "outcome": outcome,
        "returncode": proc.returncode,
        "stdout": stdout.decode(errors="replace")[-2000:],
        "stderr": stderr.decode(errors="replace")[-2000:],
    }


def run_programs(
    programs: list[str], timeout_s: float = 5.0, memory_mb: int = 512
) -> list[dict[str, Any]]:
    """:func:`run_program` for each program, in order (the worker's entry point)."""
    return [run_program(p, timeout_s, memory_mb) for p in programs]
