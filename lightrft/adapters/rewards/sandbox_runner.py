"""Runs inside the sandboxed child process: a guard of audit hooks, then the program.

Usage: ``python -I sandbox_runner.py PROGRAM_FILE``; the working directory is the sandbox's
temporary directory. Standard library only. The guard (``sys.addaudithook``, PEP 578)
refuses, with ``PermissionError``: network sockets (connect, bind, sendto, getaddrinfo),
starting processes (``os.system``, ``subprocess``, ``os.exec*``, ``os.fork``,
``os.posix_spawn``, ``pty``), ``ctypes``, opening a file for writing outside the working
directory, opening any file for reading outside it and the Python installation, and
deleting, renaming or changing the mode of files outside it. Audit hooks are not a security
boundary: code that reaches native code some other way can undo them (see
docs/reward-models.md for what the sandbox does and does not prevent).
"""

from __future__ import annotations

import os
import sys

_BLOCKED_EVENTS = {
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "os.system",
    "os.exec",
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.spawn",
    "os.startfile",
    "os.kill",
    "os.killpg",
    "subprocess.Popen",
    "pty.spawn",
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.cdata",
    "ctypes.call_function",
    "sys.setprofile",
    "sys.settrace",
    "os.chroot",
    "os.setuid",
    "sys.remote_exec",
}
_PATH_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.chmod",
    "os.chown",
    "os.mkdir",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + os.sep) for root in roots)


def _install_guard(workdir: str) -> None:
    read_roots = tuple(
        os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, workdir}
    ) + ("/dev/null", "/dev/urandom")
    write_roots = (os.path.realpath(workdir), "/dev/null")

    def guard(event: str, args: tuple[object, ...]) -> None:
        if event in _BLOCKED_EVENTS or event.startswith("ctypes."):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "import" and args and str(args[0]).split(".")[0] in ("ctypes", "_ctypes"):
            raise PermissionError("sandbox: importing ctypes is not allowed")
        if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            path = os.fsdecode(args[0])  # type: ignore[arg-type]
            mode = str(args[1]) if len(args) > 1 and args[1] is not None else "r"
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            writing = any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR)
            if not _inside(path, write_roots if writing else read_roots):
                raise PermissionError(f"sandbox: opening {path!r} is not allowed")
        if event in _PATH_EVENTS:
            for arg in args:
                if isinstance(arg, str | bytes | os.PathLike) and not _inside(
                    os.fsdecode(arg), write_roots
                ):  # type: ignore[arg-type]
                    raise PermissionError(
                        f"sandbox: {event} on {os.fsdecode(arg)!r} is not allowed"
                    )  # type: ignore[arg-type]

    sys.addaudithook(guard)


def main() -> None:
    program_file = sys.argv[1]
    with open(program_file, encoding="utf-8") as handle:
        source = handle.read()
    code = compile(source, "solution.py", "exec")
    _install_guard(os.getcwd())
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(code, namespace)  # noqa: S102 - this process exists to run untrusted code, guarded


if __name__ == "__main__":
    if sys.path and os.path.realpath(sys.path[0] or ".") == os.path.dirname(
        os.path.realpath(__file__)
    ):
        sys.path.pop(0)
    main()
