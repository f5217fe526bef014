"""The ``unsafe_local`` backend: NO OS boundary, for machines where none can be set up.

Chosen only when a user writes ``sandbox: unsafe_local`` (a loud warning is logged). The
program runs as the trainer's own user in a fresh temporary directory (deleted afterwards)
with the runner's resource limits, the seccomp filter and the audit-hook guard, in its own
session whose process group is killed at the deadline. All of these can be got past: code
that reaches native code (``_posixsubprocess``, ``ctypes`` before the guard, a C extension)
can read and write whatever the trainer's user can, reach the network, and start processes
that leave the process group (``setsid``) and outlive the deadline.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from lightrft.adapters.sandbox.launch import InnerCommand, Launch
from lightrft.adapters.sandbox.view import HostView
from lightrft.domain.sandbox import SandboxLimits


class UnsafeLocalBackend:
    """See the module docstring."""

    name = "unsafe_local"
    isolated = False

    def __init__(self, view: HostView, *, sandbox_id: int | None = None) -> None:
        self.view = view

    def missing(self) -> str | None:
        """Always available."""
        return None

    @contextmanager
    def launch(
        self, inner: InnerCommand, limits: SandboxLimits, fds: tuple[int, ...]
    ) -> Iterator[Launch]:
        """The interpreter's own command line, in a fresh temporary directory."""
        with tempfile.TemporaryDirectory(prefix="lightrft-unsafe-") as workdir:
            env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8", "TMPDIR": workdir}
            yield Launch(inner((workdir,)), workdir, env, fds, wrapped=False)
