"""Errors of the sandbox adapters."""

from __future__ import annotations

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap) or allow unprivileged user namespaces (`unshare -Urnpf --mount-proc true` "
    "must work)"
)


class SandboxError(RuntimeError):
    """The sandbox misbehaved while running a program (not the program's fault)."""


class SandboxUnavailableError(OSError):
    """No OS-enforced boundary can be set up on this machine; the message says what to
    install, or names the explicit opt-out."""
