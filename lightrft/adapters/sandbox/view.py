"""What the sandboxed program sees of the host: a read-only view of the interpreter only.

The view holds ``/usr``, the top-level system directories (``/bin``, ``/lib``, ``/lib64``
...: bound when they are directories, recreated as the same symlinks on merged-``/usr``
systems) and the Python installation that runs the program (its prefix, e.g.
``/root/.pyenv/versions/3.11.7``; only that directory, not its parents' other content).
Everything else of the host is absent: ``/etc``, ``/home``, ``/root``, the project, the
host's ``/proc`` and ``/sys``, every other mount. Writable: ``/sandbox`` (the working
directory) and ``/tmp``, fresh size-limited tmpfs mounts.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
WORKDIR = "/sandbox"
WRITABLE = (WORKDIR, "/tmp")
DEVICES = ("null", "zero", "full", "random", "urandom")
SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "HOME": WORKDIR, "LANG": "C.UTF-8", "TMPDIR": "/tmp"}


def base_interpreter() -> str:
    """The real interpreter behind ``sys.executable`` (a virtual environment's base one: the
    program runs with ``-I``, without the environment's packages)."""
    executable = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(executable)


@dataclass(frozen=True)
class HostView:
    """Read-only bind mounts (host path = sandbox path) and symlinks (link -> target)."""

    binds: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...]
    interpreter: str

    @staticmethod
    def for_interpreter(interpreter: str | None = None) -> HostView:
        """The view that ``interpreter`` (default: :func:`base_interpreter`) runs in."""
        prefixes = {sys.base_prefix, sys.base_exec_prefix} if interpreter is None else set()
        interpreter = interpreter or base_interpreter()
        binds: list[str] = []
        symlinks: list[tuple[str, str]] = []
        for top in SYSTEM_DIRS:
            if os.path.islink(top):
                symlinks.append((top, os.readlink(top)))
            elif os.path.isdir(top):
                binds.append(top)
        # the installation: <prefix>/bin/python -> <prefix>
        prefixes.add(str(Path(interpreter).parents[1]))
        for prefix in sorted(os.path.realpath(p) for p in prefixes):
            if prefix == "/":  # an interpreter in /bin: the system directories hold it
                continue
            if not any(prefix == b or prefix.startswith(b + "/") for b in binds):
                binds.append(prefix)
        return HostView(tuple(binds), tuple(symlinks), interpreter)
