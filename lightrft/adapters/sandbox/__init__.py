"""An OS-enforced sandbox for programs the product runs on behalf of a model.

:func:`open_sandbox` returns a :class:`~lightrft.domain.ports.CodeSandbox` (``run(program,
stdin, limits) -> SandboxResult``) built on Linux namespaces with bubblewrap, or util-linux
``unshare`` where bwrap is absent; it refuses to start where neither works, unless the
boundary-less ``unsafe_local`` backend is asked for by name. See docs/security.md.
"""

from lightrft.adapters.sandbox.detect import BACKENDS, CHOICES, open_sandbox
from lightrft.adapters.sandbox.errors import SandboxError, SandboxUnavailableError
from lightrft.adapters.sandbox.sandbox import ProcessSandbox

__all__ = [
    "BACKENDS",
    "CHOICES",
    "ProcessSandbox",
    "SandboxError",
    "SandboxUnavailableError",
    "open_sandbox",
]
