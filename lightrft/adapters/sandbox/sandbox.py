"""``ProcessSandbox``: the :class:`~lightrft.domain.ports.CodeSandbox` of this package.

One run: the program goes into a sealed memfd (the sandbox cannot change it, and no file
of the host holds it), a pipe carries the runner's "started" byte back, the backend wraps the
interpreter command (``python -I -B -c <runner> <config>``, see
:mod:`~lightrft.adapters.sandbox.runner`) into its boundary, and
:func:`~lightrft.adapters.sandbox.process.run_process` runs it to its end or its deadline.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import signal
from pathlib import Path

from lightrft.adapters.sandbox.errors import SandboxError
from lightrft.adapters.sandbox.launch import Backend
from lightrft.adapters.sandbox.process import ProcessRun, run_process
from lightrft.adapters.sandbox.seccomp import filter_for_machine
from lightrft.adapters.sandbox.view import HostView
from lightrft.domain.sandbox import Outcome, SandboxLimits, SandboxResult

_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


@functools.cache
def runner_source() -> str:
    """The text of :mod:`~lightrft.adapters.sandbox.runner` (run with ``-c``)."""
    return Path(__file__).with_name("runner.py").read_text(encoding="utf-8")


def sealed_memfd(data: bytes) -> int:
    """A memfd holding ``data``, sealed against any change, positioned at its start."""
    fd = os.memfd_create("lightrft-program", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def classify(run: ProcessRun, started: bool, wrapped: bool) -> Outcome:
    """The outcome of a finished run (see :mod:`lightrft.domain.sandbox`)."""
    if not started:
        return "sandbox_error"
    if run.timed_out:
        return "timeout"
    if run.returncode == 0:
        return "passed"
    if b"PermissionError: sandbox:" in run.stderr:
        return "blocked"
    if b"MemoryError" in run.stderr:
        return "memory"
    code = run.returncode
    killed_by = -code if code < 0 else code - 128 if wrapped and code > 128 else None
    if killed_by in (signal.SIGXCPU, signal.SIGKILL):
        return "timeout"  # the CPU-time limit
    return "failed"


class ProcessSandbox:
    """Runs each program in a fresh process behind ``backend``'s boundary, with the
    runner's resource limits (``RLIMIT_NPROC`` where the backend gives the sandbox its own
    process count), the seccomp filter (``seccomp``: BPF bytes; ``None``: none) and, when
    ``guard``, the audit-hook guard."""

    def __init__(
        self,
        backend: Backend,
        view: HostView,
        *,
        guard: bool = True,
        seccomp: bytes | None = None,
    ) -> None:
        self._backend = backend
        self.view = view
        self.guard = guard
        self.seccomp = seccomp

    @classmethod
    def with_filter(cls, backend: Backend, view: HostView, *, guard: bool = True) -> ProcessSandbox:
        """A sandbox with this machine's seccomp filter (none on unknown architectures)."""
        return cls(backend, view, guard=guard, seccomp=filter_for_machine())

    @property
    def backend(self) -> str:
        return self._backend.name

    def _config(
        self, limits: SandboxLimits, fds: tuple[int, int], writable: tuple[str, ...]
    ) -> str:
        rlimits = {
            "as": limits.memory_mb * 2**20,
            "cpu": limits.cpu_seconds,
            "fsize": limits.file_mb * 2**20,
            "nofile": limits.open_files,
            "core": 0,
        }
        if self._backend.isolated:  # else RLIMIT_NPROC would count all the user's processes
            rlimits["nproc"] = limits.processes
        config = {
            "program_fd": fds[0],
            "status_fd": fds[1],
            "rlimits": rlimits,
            "seccomp": self.seccomp.hex() if self.seccomp else "",
            "guard": self.guard,
            "writable": list(writable),
        }
        return json.dumps(config)

    def run(
        self, program: str, stdin: str = "", limits: SandboxLimits | None = None
    ) -> SandboxResult:
        """Runs ``program`` (Python source) and reports how it ended."""
        limits = limits or SandboxLimits()
        program_fd = sealed_memfd(program.encode("utf-8", errors="surrogatepass"))
        status_r, status_w = os.pipe()
        os.set_blocking(status_r, False)
        fds = (program_fd, status_w)

        def inner(writable: tuple[str, ...]) -> list[str]:
            config = self._config(limits, fds, writable)
            return [self.view.interpreter, "-I", "-B", "-c", runner_source(), config]

        try:
            with self._backend.launch(inner, limits, fds) as launch:
                try:
                    run = run_process(
                        launch.argv,
                        stdin=stdin.encode(),
                        env=launch.env,
                        cwd=launch.cwd,
                        pass_fds=launch.pass_fds,
                        wall_s=limits.wall_s,
                        output_bytes=limits.output_bytes,
                        after_start=launch.after_start,
                    )
                except SandboxError as error:
                    return SandboxResult("sandbox_error", None, "", str(error), limits.wall_s)
            try:
                started = os.read(status_r, 1) == b"1"
            except BlockingIOError:
                started = False
        finally:
            for fd in (program_fd, status_r, status_w):
                os.close(fd)
        return SandboxResult(
            outcome=classify(run, started, launch.wrapped),
            returncode=run.returncode,
            stdout=run.stdout.decode(errors="replace"),
            stderr=run.stderr.decode(errors="replace"),
            wall_s=run.wall_s,
            truncated=run.truncated,
        )
