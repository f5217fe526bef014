"""A persistent worker process that calls one Python function, with a per-call timeout.

The parent (:class:`FunctionWorker`) starts ``python <this file> <module:function>`` once and
reuses it for every call; a call that runs past its timeout gets the process killed, and the
next call starts a fresh one. Messages travel as pickles over two private pipes, so the
function may print to stdout freely. The worker is started from this file's path (not with
``-m``), so it imports nothing but the stdlib and the user's module; it never runs the
parent's ``__main__`` (unlike ``multiprocessing``'s spawn), and never forks a process that
holds torch threads.

The target is ``"package.module:function"`` or ``"path/to/file.py:function"`` (a file is
loaded by path, its folder put on ``sys.path`` so it can import its neighbours, as verl's
``custom_reward_function.path`` and OpenRLHF's ``--remote_rm_url file.py`` load theirs). A
call sends positional and keyword arguments; the value comes back as plain Python: tensors
and arrays (anything with ``tolist()``) become lists or numbers, inside dicts and lists too,
so the parent never needs the function's own classes to read it.

This file runs standalone in the worker: it imports only the standard library.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

_READY = "ready"
_OK = "ok"
_ERROR = "error"


class WorkerTimeout(TimeoutError):
    """The call ran past its timeout; the worker was killed (the next call restarts it)."""


class WorkerCallError(RuntimeError):
    """The function raised (message: ``TypeName: text``) or the worker died during the call."""


def resolve_target(target: str) -> Callable[..., Any]:
    """The callable named by ``"package.module:function"`` or ``"path/file.py:function"``
    (dots after ``:`` walk attributes)."""
    module_name, sep, attr_path = target.rpartition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(
            f"function reference must look like 'module:function' or 'file.py:function', "
            f"got {target!r}"
        )
    obj: Any = (
        _load_file(module_name)
        if module_name.endswith(".py")
        else (importlib.import_module(module_name))
    )
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    if not callable(obj):
        raise TypeError(f"{target!r} is not callable")
    function: Callable[..., Any] = obj
    return function


def _load_file(path: str) -> Any:
    """The module of the Python file ``path`` (its folder first on ``sys.path``)."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise FileNotFoundError(f"reward function file {path} does not exist")
    sys.path.insert(0, str(file.parent))
    spec = importlib.util.spec_from_file_location(f"lightrft_user_reward_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def plain(value: Any) -> Any:
    """``value`` as plain Python: ``tolist()`` of tensors and arrays, inside dicts, lists and
    tuples too (see the module docstring)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    to_list = getattr(value, "tolist", None)
    return to_list() if callable(to_list) else value


class FunctionWorker:
    """Calls ``target`` (``"module:function"``) in a separate, reusable, killable process.

    ``call(args, timeout)`` returns the function's value or raises :class:`WorkerTimeout` /
    :class:`WorkerCallError`; the parent process is never at risk. ``restarts`` counts the
    processes started after the first one.
    """

    def __init__(self, target: str, *, start_timeout: float = 60.0) -> None:
        self.target = target
        self.start_timeout = start_timeout
        self.restarts = 0
        self._started = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None

    @property
    def alive(self) -> bool:
        """Whether a worker process is running."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Starts the worker if none runs; raises ``ImportError`` if the target does not load."""
        if self.alive:
            return
        self._stop_process()
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        # The child sees the parent's import path (editable installs, test helper modules).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        argv = [sys.executable, str(Path(__file__).resolve()), self.target]
        argv += [str(to_child_r), str(from_child_w)]
        try:
            self._proc = subprocess.Popen(argv, env=env, pass_fds=(to_child_r, from_child_w))
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._send = Connection(to_child_w, readable=False)
        self._recv = Connection(from_child_r, writable=False)
        if self._started:
            self.restarts += 1
        self._started += 1
        kind, payload = self._receive(self.start_timeout, starting=True)
        if kind != _READY:
            self._stop_process()
            raise ImportError(f"cannot load reward function {self.target!r}: {payload}")

    def call(
        self, args: tuple[Any, ...], timeout: float, kwargs: dict[str, Any] | None = None
    ) -> Any:
        """``target(*args, **kwargs)`` in the worker, its value as :func:`plain` Python; at
        most ``timeout`` seconds (then it is killed)."""
        self.start()
        assert self._send is not None
        try:
            self._send.send((args, kwargs or {}))
        except (BrokenPipeError, OSError) as error:
            self._stop_process()
            raise WorkerCallError(f"worker process died: {error}") from None
        kind, payload = self._receive(timeout, starting=False)
        if kind == _OK:
            return payload
        raise WorkerCallError(str(payload))

    def _receive(self, timeout: float, *, starting: bool) -> tuple[str, Any]:
        assert self._recv is not None
        try:
            ready = self._recv.poll(timeout)  # a worker that dies makes the pipe readable (EOF)
            message: tuple[str, Any] | None = self._recv.recv() if ready else None
        except (EOFError, OSError) as error:
            code = self._proc.poll() if self._proc is not None else None
            self._stop_process()
            if starting:
                return _ERROR, f"worker exited with code {code} while loading"
            raise WorkerCallError(f"worker process died (exit code {code}): {error}") from None
        if message is None:
            self._stop_process()
            what = "start" if starting else "call"
            raise WorkerTimeout(f"{self.target} {what} exceeded {timeout:g} s")
        return message

    def _stop_process(self) -> None:
        for conn in (self._send, self._recv):
            if conn is not None:
                conn.close()
        self._send = self._recv = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Asks the worker to exit (killing it if it does not) and releases the pipes."""
        if self.alive and self._send is not None:
            try:
                self._send.send(None)
                assert self._proc is not None
                self._proc.wait(timeout=1.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop_process()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: best effort only
            pass


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _serve(target: str, recv_fd: int, send_fd: int) -> None:
    """Worker loop: load ``target``, then answer ``(args, kwargs)`` messages until ``None``
    arrives."""
    recv = Connection(recv_fd, writable=False)
    send = Connection(send_fd, readable=False)
    try:
        fn = resolve_target(target)
    except BaseException as error:  # noqa: BLE001 - reported to the parent
        send.send((_ERROR, _describe(error)))
        return
    send.send((_READY, None))
    while True:
        try:
            message = recv.recv()
        except EOFError:
            return
        if message is None:
            return
        args, kwargs = message
        try:
            reply: tuple[str, Any] = (_OK, plain(fn(*args, **kwargs)))
        except BaseException as error:  # noqa: BLE001 - SystemExit too: the worker lives on
            reply = (_ERROR, _describe(error))
        try:
            send.send(reply)
        except Exception as error:  # an unpicklable return value
            send.send((_ERROR, f"cannot send the result back: {_describe(error)}"))


if __name__ == "__main__":
    # Running as a script puts this file's folder first on sys.path: drop it, so the
    # sibling modules cannot shadow the user's.
    if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    _serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
