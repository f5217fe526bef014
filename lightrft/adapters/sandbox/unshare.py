"""The ``unshare`` backend: util-linux ``unshare`` plus a setup script, where bwrap is absent.

``unshare`` creates the user, mount, PID (forking: the script is the namespace's init),
network (empty), IPC, UTS and cgroup namespaces; ``--kill-child`` kills that init when
``unshare`` dies (the deadline kills ``unshare``). The script (``/bin/sh``, util-linux
``mount``/``pivot_root``/``setpriv``) builds the same view as bwrap: a tmpfs root holding
read-only binds of the :class:`~lightrft.adapters.sandbox.view.HostView` (every submount
remounted read-only too, keeping its ``nosuid``/``nodev``/``noexec``), bound device nodes,
a fresh ``/proc``, size-limited tmpfs at ``/sandbox`` and ``/tmp``, the root itself
read-only; then ``pivot_root . .`` and a lazy unmount of the old root stacked on top, so no host path is left
reachable. The program runs as the script's child through ``setpriv`` (no capabilities, an
empty bounding set, ``no_new_privs``, and as root: the mapped unprivileged id).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager

from lightrft.adapters.sandbox.idmap import IdMapHandshake
from lightrft.adapters.sandbox.launch import InnerCommand, Launch, find_tool, setpriv_drop
from lightrft.adapters.sandbox.view import DEVICES, SANDBOX_ENV, WORKDIR, WRITABLE, HostView
from lightrft.domain.sandbox import SandboxLimits

TOOLS = ("unshare", "mount", "umount", "pivot_root", "setpriv")
NAMESPACES = ["--user", "--mount", "--pid", "--fork", "--kill-child", "--net", "--ipc"]
NAMESPACES += ["--uts", "--cgroup", "--propagation", "private"]
NEW_ROOT = "/tmp"  # a tmpfs is mounted over it, inside the private mount namespace only

_READ_ONLY = """ro() {
  while read -r _ _ _ _ point opts _; do
    case "$point" in "$1"|"$1"/*) ;; *) continue ;; esac
    keep=""
    for o in nosuid nodev noexec noatime nodiratime; do
      case ",$opts," in *",$o,"*) keep="$keep,$o" ;; esac
    done
    "$MOUNT" -o "remount,bind,ro$keep" "$point"
  done < /proc/self/mountinfo
}
"""


def _pid_of_unshare(data: bytes, process: object) -> int | None:
    """The script announces itself with a line; the namespace is ``unshare``'s own."""
    return int(process.pid) if data.endswith(b"\n") else None  # type: ignore[attr-defined]


class UnshareBackend:
    """See the module docstring. ``sandbox_id`` as for
    :class:`~lightrft.adapters.sandbox.bwrap.BwrapBackend`."""

    name = "unshare"
    isolated = True

    def __init__(self, view: HostView, *, sandbox_id: int | None) -> None:
        self.view = view
        self.sandbox_id = sandbox_id
        self.tools = {name: find_tool(name) for name in TOOLS}

    def missing(self) -> str | None:
        """Why this backend cannot run here, or ``None``."""
        absent = [name for name, path in self.tools.items() if path is None]
        return f"{', '.join(absent)} (util-linux) not installed" if absent else None

    def script(
        self, inner: list[str], limits: SandboxLimits, handshake: tuple[int, int] | None
    ) -> str:
        """The setup script (``handshake``: the child's two fds when the parent maps ids)."""
        q = shlex.quote
        tool = {name: q(str(path)) for name, path in self.tools.items()}
        lines = ["set -eu", f"MOUNT={tool['mount']}", _READ_ONLY]
        if handshake is not None:
            ready, go = handshake
            lines += [f"echo ready > /proc/self/fd/{ready}", f"read -r _ < /proc/self/fd/{go}"]
        size = limits.disk_mb * 2**20
        lines += [
            f'"$MOUNT" -t tmpfs -o mode=0755,size=4m lightrft-sandbox {NEW_ROOT}',
            f"cd {NEW_ROOT}",
            "mkdir -p proc dev " + " ".join(q(p.lstrip("/")) for p in WRITABLE),
        ]
        for path in self.view.binds:
            target = q(f"{NEW_ROOT}{path}")
            lines += [f"mkdir -p {target}", f'"$MOUNT" --rbind {q(path)} {target}', f"ro {target}"]
        for link, target in self.view.symlinks:
            lines.append(f"ln -s {q(target)} {q('.' + link)}")
        for device in DEVICES:
            lines += [f"touch dev/{device}", f'"$MOUNT" --bind /dev/{device} dev/{device}']
        lines += ["ln -s /proc/self/fd dev/fd", '"$MOUNT" -t proc -o nosuid,nodev,noexec proc proc']
        for path in WRITABLE:
            options = f"mode=1777,size={size},nosuid,nodev"
            lines.append(f'"$MOUNT" -t tmpfs -o {options} lightrft-sandbox {q(path.lstrip("/"))}')
        lines += [
            f'"$MOUNT" -o remount,bind,ro {NEW_ROOT}',
            f"{tool['pivot_root']} . .",  # the old root is stacked on the new one: detach it
            f"{tool['umount']} -l .",
            "cd /",
            f"cd {WORKDIR}",
            "unset OLDPWD",
            " ".join(q(arg) for arg in inner),
        ]
        return "\n".join(lines) + "\n"

    @contextmanager
    def launch(
        self, inner: InnerCommand, limits: SandboxLimits, fds: tuple[int, ...]
    ) -> Iterator[Launch]:
        """The unshare command line for one run."""
        setpriv = str(self.tools["setpriv"])
        command = setpriv_drop(setpriv, self.sandbox_id, bounding=True) + inner(WRITABLE)
        argv = [str(self.tools["unshare"]), *NAMESPACES]
        if self.sandbox_id is None:
            argv.append("--map-root-user")
            script = self.script(command, limits, None)
            yield Launch([*argv, "--", "/bin/sh", "-c", script], "/", dict(SANDBOX_ENV), fds)
            return
        handshake = IdMapHandshake(self.sandbox_id, _pid_of_unshare)
        script = self.script(command, limits, handshake.child_fds)
        try:
            yield Launch(
                [*argv, "--", "/bin/sh", "-c", script],
                "/",
                dict(SANDBOX_ENV),
                (*fds, *handshake.child_fds),
                after_start=handshake.complete,
            )
        finally:
            handshake.close()
