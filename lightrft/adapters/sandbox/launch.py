"""What a sandbox backend hands the process runner: the command line and its surroundings.

A backend (``bwrap``, ``unshare``, ``unsafe_local``) wraps the interpreter's command line
(built by :class:`~lightrft.adapters.sandbox.sandbox.ProcessSandbox` for the directories the
program may write) into the command that sets up the boundary.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from lightrft.domain.sandbox import SandboxLimits

# the interpreter's argv, given the directories the program may write to
InnerCommand = Callable[[tuple[str, ...]], list[str]]
AfterStart = Callable[["subprocess.Popen[bytes]", float], None]


@dataclass(frozen=True)
class Launch:
    """A ready command: ``argv`` run in ``cwd`` with ``env`` and ``pass_fds``; ``after_start``
    (a handshake) runs right after the start. ``wrapped``: a signal that ends the program
    shows as exit status 128 + N (the wrapper reports it) rather than -N."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    after_start: AfterStart | None = None
    wrapped: bool = True


class Backend(Protocol):
    """One way of building the boundary."""

    name: str
    isolated: bool  # namespaces: own filesystem view, network, PIDs and process count

    def missing(self) -> str | None:
        """Why this backend cannot run here (a tool is missing), or ``None``."""
        ...

    def launch(
        self, inner: InnerCommand, limits: SandboxLimits, fds: tuple[int, ...]
    ) -> AbstractContextManager[Launch]:
        """The command for one run (resources it needs are released on exit)."""
        ...


def find_tool(name: str) -> str | None:
    """Absolute path of a system tool (in the usual system directories only)."""
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin")


def setpriv_drop(setpriv: str, sandbox_id: int | None, *, bounding: bool) -> list[str]:
    """``setpriv`` options that switch to ``sandbox_id`` (when given) and leave the program
    no capabilities and ``no_new_privs`` (``bounding``: also empty the bounding set, which
    needs ``CAP_SETPCAP``)."""
    argv = [setpriv]
    if sandbox_id is not None:
        argv += [f"--reuid={sandbox_id}", f"--regid={sandbox_id}", "--clear-groups"]
    argv += ["--inh-caps=-all", "--no-new-privs"]
    if bounding:
        argv.append("--bounding-set=-all")
    return [*argv, "--"]
