"""One sandbox process from the outside: stdin fed, output kept within bounds, a deadline.

The process starts in a new session; at the deadline its whole process group gets
``SIGKILL``. For the namespace backends that is the wrapper (``bwrap`` / ``unshare``), whose
death kills the sandbox's PID-namespace init (``--die-with-parent`` / ``--kill-child``), and
the kernel then kills every process in that namespace, ``setsid`` ones included. Output is
read by two threads that keep only the last ``output_bytes`` of each stream, so a program
that prints gigabytes costs the trainer no memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lightrft.adapters.sandbox.errors import SandboxError

PIPE_GRACE_S = 5.0  # after the process ended or was killed, for its pipes to close


@dataclass(frozen=True)
class ProcessRun:
    """What happened to the process: exit status (negative: killed by that signal), the
    kept output, whether the deadline killed it, and the seconds it took."""

    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    truncated: bool
    wall_s: float


class _Tail:
    """Reads a stream to its end, keeping its last ``limit`` bytes."""

    def __init__(self, stream: object, limit: int) -> None:
        self.data = bytearray()
        self.dropped = False
        self._limit = limit
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        read = stream.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            self.data += chunk
            if len(self.data) > self._limit:
                del self.data[: len(self.data) - self._limit]
                self.dropped = True

    def join(self, deadline: float) -> bool:
        self._thread.join(max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive()


def _feed(stream: object, data: bytes) -> None:
    try:
        stream.write(data)  # type: ignore[attr-defined]
        stream.close()  # type: ignore[attr-defined]
    except OSError:  # the program exited (or was killed) without reading it all
        pass


def run_process(
    argv: Sequence[str],
    *,
    stdin: bytes,
    env: Mapping[str, str],
    cwd: str,
    pass_fds: Sequence[int],
    wall_s: float,
    output_bytes: int,
    after_start: Callable[[subprocess.Popen[bytes], float], None] | None = None,
) -> ProcessRun:
    """Runs ``argv`` to its end or ``wall_s`` seconds. ``after_start(process, deadline)``
    runs right after the start (a handshake); if it raises, the process is killed and the
    error propagates."""
    started = time.monotonic()
    deadline = started + wall_s
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    out, err = _Tail(process.stdout, output_bytes), _Tail(process.stderr, output_bytes)
    try:
        if after_start is not None:
            after_start(process, deadline)
        threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True).start()
        timed_out = False
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    except BaseException:
        _kill(process)
        raise
    _kill(process)
    grace = time.monotonic() + PIPE_GRACE_S
    if not (out.join(grace) and err.join(grace)):
        raise SandboxError(
            f"the sandbox's output pipes stayed open {PIPE_GRACE_S:g} s after its end"
        )
    return ProcessRun(
        returncode=process.returncode,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        timed_out=timed_out,
        truncated=out.dropped or err.dropped,
        wall_s=time.monotonic() - started,
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the process group (a no-op once it is gone), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(PIPE_GRACE_S)
    except subprocess.TimeoutExpired:
        raise SandboxError(
            f"sandbox process {process.pid} still runs {PIPE_GRACE_S:g} s after SIGKILL"
        ) from None
