"""Choosing the sandbox backend at start, and refusing to start without a boundary.

``open_sandbox("auto")`` tries ``bwrap``, then ``unshare``; each must have its tools and pass
a probe (a real program run behind the boundary). When none works it raises
:class:`~lightrft.adapters.sandbox.errors.SandboxUnavailableError`, one line saying why each
failed and what to install. ``unsafe_local`` (no boundary) is never chosen by ``auto``: only by
name, and it logs a loud warning.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from lightrft.adapters.sandbox.bwrap import BwrapBackend
from lightrft.adapters.sandbox.errors import INSTALL_HINT, SandboxUnavailableError
from lightrft.adapters.sandbox.idmap import drop_ids
from lightrft.adapters.sandbox.launch import Backend
from lightrft.adapters.sandbox.sandbox import ProcessSandbox
from lightrft.adapters.sandbox.unsafe_local import UnsafeLocalBackend
from lightrft.adapters.sandbox.unshare import UnshareBackend
from lightrft.adapters.sandbox.view import HostView
from lightrft.domain.registry import Registry
from lightrft.domain.sandbox import SandboxLimits

log = structlog.get_logger(__name__)

BackendFactory = Callable[[HostView, "int | None"], Backend]
BACKENDS: Registry[BackendFactory] = Registry("code sandbox")
BACKENDS.add("bwrap", lambda view, ids: BwrapBackend(view, sandbox_id=ids))
BACKENDS.add("unshare", lambda view, ids: UnshareBackend(view, sandbox_id=ids))
BACKENDS.add("unsafe_local", lambda view, ids: UnsafeLocalBackend(view, sandbox_id=ids))
AUTO_ORDER = ("bwrap", "unshare")
CHOICES = ("auto", *BACKENDS.names())
PROBE_LIMITS = SandboxLimits(wall_s=20.0)
UNSAFE_WARNING = (
    "sandbox: unsafe_local runs model-written code WITHOUT an OS boundary: it can read and "
    "write everything this user can, reach the network and outlive its time limit"
)


def probe(sandbox: ProcessSandbox) -> str | None:
    """Runs a trivial program; ``None`` when it ran, else why not (one line)."""
    result = sandbox.run("print('sandbox-ok')", limits=PROBE_LIMITS)
    if result.outcome == "passed" and result.stdout.strip() == "sandbox-ok":
        return None
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return f"probe {result.outcome}: {lines[-1] if lines else 'no output'}"


def open_sandbox(
    kind: str = "auto", *, guard: bool = True, interpreter: str | None = None
) -> ProcessSandbox:
    """A working sandbox of ``kind`` (``auto``, ``bwrap``, ``unshare`` or ``unsafe_local``).

    Raises ``SandboxUnavailableError`` when the boundary cannot be set up here."""
    if kind != "auto" and kind not in BACKENDS:
        raise ValueError(f"unknown sandbox {kind!r}; valid choices: {', '.join(CHOICES)}")
    view = HostView.for_interpreter(interpreter)
    reasons = []
    for name in AUTO_ORDER if kind == "auto" else (kind,):
        backend = BACKENDS.get(name)(view, drop_ids())
        sandbox = ProcessSandbox.with_filter(backend, view, guard=guard)
        reason = backend.missing() or probe(sandbox)
        if reason is None:
            if not backend.isolated:
                log.warning("sandbox.unsafe_local", warning=UNSAFE_WARNING)
            log.info("sandbox.ready", backend=name, seccomp=sandbox.seccomp is not None)
            return sandbox
        reasons.append(f"{name}: {reason}")
    raise SandboxUnavailableError(
        f"cannot isolate model-written code ({'; '.join(reasons)}): {INSTALL_HINT}, or set "
        "sandbox: unsafe_local on the reward source to run it without a boundary"
    )
