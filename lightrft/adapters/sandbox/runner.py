"""Runs inside the sandbox, as trusted code, before the untrusted program: limits, then
filters, then the program.

Standard library only, one file: the sandbox passes this file's text with ``python -I -B -c``
and one JSON argument: ``program_fd`` (a sealed memfd holding the program), ``status_fd`` (a
pipe; one byte written when the program is about to start, so the parent tells a program
that failed from a sandbox that never started it), ``rlimits`` (name -> value), ``seccomp``
(hex of a BPF filter, or empty), ``guard`` (whether to install the audit-hook guard) and
``writable`` (the directories the guard lets the program write to).

Order: read and close the program fd; set the resource limits (inherited by every process the
program starts, and only lowerable: raising a hard limit needs a capability the sandbox does
not have); ``no_new_privs`` and the seccomp filter (irrevocable, inherited); the audit-hook
guard (PEP 578; an extra layer that makes plain ``os.system`` / ``socket`` / ``open`` of
outside files fail fast with ``PermissionError: sandbox: ...``; it is NOT the boundary: code
can get past it, e.g. through ``_posixsubprocess``, and then meets the namespaces); the
status byte; the program, as ``__main__`` named ``solution.py``.
"""

from __future__ import annotations

import json
import os
import sys

_BLOCKED_EVENTS = {
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn",
    "os.spawn", "os.startfile", "os.kill", "os.killpg", "subprocess.Popen", "pty.spawn",
    "sys.setprofile", "sys.settrace", "os.chroot", "os.setuid", "sys.remote_exec",
}  # fmt: skip
_PATH_EVENTS = {
    "os.remove", "os.rename", "os.rmdir", "os.chmod", "os.chown", "os.mkdir", "os.symlink",
    "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
}  # fmt: skip
_RLIMITS = {
    "as": "RLIMIT_AS", "cpu": "RLIMIT_CPU", "fsize": "RLIMIT_FSIZE", "nofile": "RLIMIT_NOFILE",
    "nproc": "RLIMIT_NPROC", "core": "RLIMIT_CORE",
}  # fmt: skip
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def _set_limits(limits: dict[str, int]) -> None:
    import resource

    for name, value in limits.items():
        which = getattr(resource, _RLIMITS[name])
        hard = resource.getrlimit(which)[1]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        # CPU: the soft limit sends SIGXCPU, the hard one a second later SIGKILL
        resource.setrlimit(which, (value, value + 1 if name == "cpu" else value))


def _install_seccomp(program: bytes) -> None:
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    for name in [m for m in sys.modules if m.split(".")[0] in ("ctypes", "_ctypes")]:
        del sys.modules[name]  # the program's own ``import ctypes`` meets the guard


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _install_guard(writable: list[str]) -> None:
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, *writable}
    read_roots = tuple(os.path.realpath(p) for p in prefixes) + ("/dev/null", "/dev/urandom")
    write_roots = (*(os.path.realpath(p) for p in writable), "/dev/null")

    def guard(event: str, args: tuple[object, ...]) -> None:
        if event in _BLOCKED_EVENTS or event.startswith("ctypes."):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "import" and args and str(args[0]).split(".")[0] in ("ctypes", "_ctypes"):
            raise PermissionError("sandbox: importing ctypes is not allowed")
        if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            path = os.fsdecode(args[0])
            mode = str(args[1]) if len(args) > 1 and args[1] is not None else "r"
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            writing = any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR)
            if not _inside(path, write_roots if writing else read_roots):
                raise PermissionError(f"sandbox: opening {path!r} is not allowed")
        if event in _PATH_EVENTS:
            for arg in args:
                if isinstance(arg, str | bytes | os.PathLike):
                    where = os.fsdecode(arg)
                    if not _inside(where, write_roots):
                        raise PermissionError(f"sandbox: {event} on {where!r} is not allowed")

    sys.addaudithook(guard)


def main(config: dict[str, object]) -> None:
    with os.fdopen(int(config["program_fd"]), "rb") as handle:  # type: ignore[call-overload]
        source = handle.read().decode("utf-8", errors="replace")
    _set_limits(config["rlimits"])  # type: ignore[arg-type]
    if config["seccomp"]:
        _install_seccomp(bytes.fromhex(str(config["seccomp"])))
    if config["guard"]:
        _install_guard(list(config["writable"]))  # type: ignore[call-overload]
    status_fd = int(config["status_fd"])  # type: ignore[call-overload]
    os.write(status_fd, b"1")
    os.close(status_fd)
    code = compile(source, "solution.py", "exec")
    sys.argv = ["solution.py"]
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(code, namespace)  # noqa: S102 - this process exists to run untrusted code


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
