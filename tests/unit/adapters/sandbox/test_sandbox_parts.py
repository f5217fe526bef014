"""Pieces of the sandbox without running one: outcome classification, the host view, the
limits' checks, backend choice and the refusal to start without a boundary."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from lightrft.adapters.sandbox import BACKENDS, CHOICES, SandboxUnavailableError, open_sandbox
from lightrft.adapters.sandbox import launch as launch_module
from lightrft.adapters.sandbox.process import ProcessRun
from lightrft.adapters.sandbox.sandbox import classify
from lightrft.adapters.sandbox.view import HostView
from lightrft.domain.sandbox import SandboxLimits


def run(code: int, stderr: bytes = b"", timed_out: bool = False) -> ProcessRun:
    return ProcessRun(code, b"", stderr, timed_out, False, 0.1)


@pytest.mark.parametrize(
    ("process", "started", "wrapped", "outcome"),
    [
        (run(0), True, True, "passed"),
        (run(1, b"AssertionError"), True, True, "failed"),
        (run(1, b"PermissionError: sandbox: os.system is not allowed"), True, True, "blocked"),
        (run(1, b"MemoryError"), True, True, "memory"),
        (run(128 + signal.SIGXCPU), True, True, "timeout"),  # CPU limit, through a wrapper
        (run(-signal.SIGXCPU), True, False, "timeout"),
        (run(128 + signal.SIGXCPU), True, False, "failed"),  # exit(152) of a bare process
        (run(-signal.SIGKILL, timed_out=True), True, True, "timeout"),
        (run(1, b"bwrap: Can't mount proc"), False, True, "sandbox_error"),
        (run(0), False, True, "sandbox_error"),  # exited 0 without running the program
    ],
)
def test_classify(process: ProcessRun, started: bool, wrapped: bool, outcome: str) -> None:
    assert classify(process, started, wrapped) == outcome


def test_host_view_holds_the_interpreter_and_nothing_of_the_project() -> None:
    view = HostView.for_interpreter()
    prefix = str(Path(view.interpreter).parents[1])
    assert any(prefix == b or prefix.startswith(b + "/") for b in view.binds)
    assert "/usr" in view.binds
    for forbidden in ("/etc", "/home", "/root", "/proc", "/sys", "/work", "/", str(Path.cwd())):
        assert forbidden not in view.binds
    assert "/" not in HostView.for_interpreter("/bin/python3").binds  # prefix "/" is not bound
    for link, target in view.symlinks:  # merged /usr: /lib -> usr/lib as on the host
        assert Path(link).is_symlink() and str(Path(link).readlink()) == target


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"wall_s": 0}, "SandboxLimits.wall_s must be a finite number > 0"),
        ({"wall_s": float("inf")}, "wall_s must be a finite number"),
        ({"memory_mb": 8}, "SandboxLimits.memory_mb must be >= 16, got 8"),
        ({"processes": 0}, "SandboxLimits.processes must be >= 1"),
        ({"cpu_s": 0}, "SandboxLimits.cpu_s must be >= 1"),
    ],
)
def test_limits_are_checked(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SandboxLimits(**kwargs)  # type: ignore[arg-type]


def test_cpu_limit_follows_the_wall_limit() -> None:
    assert SandboxLimits(wall_s=2.5).cpu_seconds == 4  # ceil(2.5) + 1
    assert SandboxLimits(wall_s=2.5, cpu_s=1).cpu_seconds == 1


def test_choices() -> None:
    assert CHOICES == ("auto", "bwrap", "unsafe_local", "unshare")
    assert set(BACKENDS.names()) == {"bwrap", "unshare", "unsafe_local"}
    with pytest.raises(ValueError, match="unknown sandbox 'docker'; valid choices: auto, bwrap"):
        open_sandbox("docker")


def test_refuses_to_start_without_a_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("bwrap", "unshare"):
        monkeypatch.setattr(f"lightrft.adapters.sandbox.{module}.find_tool", lambda name: None)
    with pytest.raises(SandboxUnavailableError) as caught:
        open_sandbox("auto")
    message = str(caught.value)
    assert "\n" not in message
    assert "bwrap: bwrap is not installed" in message
    assert (
        "unshare: unshare, mount, umount, pivot_root, setpriv (util-linux) not installed" in message
    )
    assert "apt-get install bubblewrap" in message and "sandbox: unsafe_local" in message
    assert launch_module.find_tool("sh") is not None  # only the backends' lookups were cut


def test_unsafe_local_is_explicit_and_loud() -> None:
    with capture_logs() as logs:
        sandbox = open_sandbox("unsafe_local")
    assert sandbox.backend == "unsafe_local"
    warning = [e for e in logs if e["event"] == "sandbox.unsafe_local"]
    assert warning and warning[0]["log_level"] == "warning"
    assert "WITHOUT an OS boundary" in warning[0]["warning"]
    assert sandbox.run("print(1 + 1)\n").stdout == "2\n"
