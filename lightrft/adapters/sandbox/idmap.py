"""User and group ids of the sandbox when the trainer runs as root.

The kernel does not apply ``RLIMIT_NPROC`` (the fork-bomb limit) to processes whose real
user is host root, even inside a user namespace. So when the trainer is root, the sandbox's
user namespace maps two ids, written by the (root) parent: 0 -> 0, for the setup steps only
(mounts, as root of the namespace, never the program), and ``SANDBOX_ID`` -> ``SANDBOX_ID``
(host ``nobody``), which ``setpriv`` switches to, dropping every capability, before the
program starts. The program then runs as an unprivileged host user, and its process count
is per user namespace, so it counts the sandbox's own processes only.

The child announces its user namespace on a pipe (``ready``), the parent writes the maps and
answers on another pipe (``go``); each wait has a deadline.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from lightrft.adapters.sandbox.errors import SandboxError

SANDBOX_ID = 65534  # nobody
HANDSHAKE_S = 10.0

PidReader = Callable[[bytes, "subprocess.Popen[bytes]"], int | None]


def drop_ids() -> int | None:
    """The id the program runs as when the trainer is root, else ``None`` (the trainer's own
    unprivileged user is kept; its namespace maps it as usual)."""
    return SANDBOX_ID if os.geteuid() == 0 else None


def write_id_maps(pid: int, sandbox_id: int) -> None:
    """Writes the uid and gid maps of ``pid``'s user namespace (each in one write)."""
    mapping = f"0 0 1\n{sandbox_id} {sandbox_id} 1\n"
    for name in ("uid_map", "gid_map"):
        Path(f"/proc/{pid}/{name}").write_text(mapping)


class IdMapHandshake:
    """The two pipes of the handshake; ``child_fds`` go to the child, :meth:`complete` runs in
    the parent right after the start."""

    def __init__(self, sandbox_id: int, pid_of: PidReader) -> None:
        self.sandbox_id = sandbox_id
        self._pid_of = pid_of
        self.ready_r, self.ready_w = os.pipe()
        self.go_r, self.go_w = os.pipe()

    @property
    def child_fds(self) -> tuple[int, int]:
        """(the fd the child announces on, the fd it waits on)."""
        return self.ready_w, self.go_r

    def complete(self, process: subprocess.Popen[bytes], deadline: float) -> None:
        """Reads the announcement, writes the maps, lets the child go."""
        os.close(self.ready_w)
        os.close(self.go_r)
        self.ready_w = self.go_r = -1
        limit = min(deadline, time.monotonic() + HANDSHAKE_S)
        data = b""
        while (pid := self._pid_of(data, process)) is None:
            remaining = limit - time.monotonic()
            readable = select.select([self.ready_r], [], [], max(0.0, remaining))[0]
            chunk = os.read(self.ready_r, 4096) if readable else b""
            if not chunk:
                why = "exited" if readable else f"did not start within {HANDSHAKE_S:g} s"
                raise SandboxError(f"the sandbox {why} before its user namespace was ready")
            data += chunk
        try:
            write_id_maps(pid, self.sandbox_id)
            os.write(self.go_w, b"go\n")
        except OSError as error:
            raise SandboxError(f"cannot map the sandbox's user ids: {error}") from None

    def close(self) -> None:
        """Closes whatever of the four fds is still open."""
        for fd in (self.ready_r, self.ready_w, self.go_r, self.go_w):
            if fd >= 0:
                os.close(fd)
        self.ready_r = self.ready_w = self.go_r = self.go_w = -1
