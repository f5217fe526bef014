"""The ``bwrap`` backend: bubblewrap builds the namespaces and the filesystem view.

New user, PID, network (an empty one: loopback only), mount, IPC, UTS and (where possible)
cgroup namespaces; the read-only :class:`~lightrft.adapters.sandbox.view.HostView`, a fresh
``/proc`` and minimal ``/dev``, size-limited tmpfs at ``/sandbox`` and ``/tmp``, the rest of
the root read-only; every capability dropped, a new session, ``--die-with-parent``. bwrap
stays outside as the PID namespace's parent: killing it kills the namespace's init and so
every process in it. As root, the ids are mapped by the parent (see
:mod:`~lightrft.adapters.sandbox.idmap`) and ``setpriv`` switches to them; otherwise bwrap
maps the trainer's own user and forbids nested user namespaces (``--disable-userns``).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lightrft.adapters.sandbox.idmap import IdMapHandshake
from lightrft.adapters.sandbox.launch import InnerCommand, Launch, find_tool, setpriv_drop
from lightrft.adapters.sandbox.view import SANDBOX_ENV, WORKDIR, WRITABLE, HostView
from lightrft.domain.sandbox import SandboxLimits

NAMESPACES = ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
NAMESPACES += ["--unshare-uts", "--unshare-cgroup-try"]


def _options_of(bwrap: str) -> frozenset[str]:
    """The options this bwrap knows (from ``--help``)."""
    try:
        text = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(re.findall(r"^\s+(--[a-z0-9-]+)", text, flags=re.MULTILINE))


def _child_pid(data: bytes, process: object) -> int | None:
    """bwrap's ``--info-fd`` JSON, once complete: the sandbox's pid (host numbering)."""
    try:
        info, _ = json.JSONDecoder().raw_decode(data.decode())
    except ValueError:
        return None
    return int(info["child-pid"])


class BwrapBackend:
    """See the module docstring. ``sandbox_id``: the id the program runs as, mapped by the
    parent (root only; see :func:`~lightrft.adapters.sandbox.idmap.drop_ids`), or ``None``:
    bwrap maps the caller's own user."""

    name = "bwrap"
    isolated = True

    def __init__(self, view: HostView, *, sandbox_id: int | None) -> None:
        self.view = view
        self.sandbox_id = sandbox_id
        self.bwrap, self.setpriv = find_tool("bwrap"), find_tool("setpriv")
        self._options = _options_of(self.bwrap) if self.bwrap is not None else frozenset()

    def missing(self) -> str | None:
        """Why this backend cannot run here, or ``None``."""
        if self.bwrap is None:
            return "bwrap is not installed"
        if "--size" not in self._options:
            return "bwrap is older than 0.6 (no --size for tmpfs)"
        if self.sandbox_id is not None and self.setpriv is None:
            return "setpriv (util-linux) is not installed"
        return None

    def _mounts(self, limits: SandboxLimits) -> list[str]:
        argv: list[str] = []
        made: set[str] = set()
        for path in self.view.binds:
            # parents as 0755 directories (bwrap would copy the host's modes, e.g. /root 0700)
            for parent in reversed(Path(path).parents[:-1]):
                if str(parent) not in made:
                    argv += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            argv += ["--ro-bind", path, path]
        for link, target in self.view.symlinks:
            argv += ["--symlink", target, link]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        for path in WRITABLE:
            size = str(limits.disk_mb * 2**20)
            argv += ["--perms", "1777", "--size", size, "--tmpfs", path]
        return [*argv, "--remount-ro", "/", "--chdir", WORKDIR]

    @contextmanager
    def launch(
        self, inner: InnerCommand, limits: SandboxLimits, fds: tuple[int, ...]
    ) -> Iterator[Launch]:
        """The bwrap command line for one run."""
        assert self.bwrap is not None, self.missing()
        argv = [self.bwrap, *NAMESPACES, "--die-with-parent", "--new-session"]
        argv += ["--cap-drop", "ALL", "--hostname", "sandbox", *self._mounts(limits)]
        if self.sandbox_id is None:
            # bwrap >= 0.8 also forbids nested user namespaces (the seccomp filter does anyway)
            argv += ["--disable-userns"] if "--disable-userns" in self._options else []
            yield Launch([*argv, "--", *inner(WRITABLE)], "/", dict(SANDBOX_ENV), fds)
            return
        assert self.setpriv is not None, self.missing()
        handshake = IdMapHandshake(self.sandbox_id, _child_pid)
        info_w, block_r = handshake.child_fds
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        argv += ["--info-fd", str(info_w), "--userns-block-fd", str(block_r), "--"]
        argv += setpriv_drop(self.setpriv, self.sandbox_id, bounding=False)
        try:
            yield Launch(
                [*argv, *inner(WRITABLE)],
                "/",
                dict(SANDBOX_ENV),
                (*fds, info_w, block_r),
                after_start=handshake.complete,
            )
        finally:
            handshake.close()
