"""``PythonTool``: runs the model's Python code in the code sandbox, returns its output.

The code runs in a fresh process behind the :class:`~lightrft.domain.ports.CodeSandbox`
given to the constructor (the one the unit-test reward uses:
:func:`lightrft.adapters.sandbox.open_sandbox`), under ``SandboxLimits`` (wall time, memory,
no network). The result is the program's standard output, cut to ``max_output_chars``; a
program that fails, times out or runs out of memory is a
:class:`~lightrft.domain.agent.ToolError` whose message (the last lines of its standard
error) the model sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightrft.adapters.agents.arguments import only_string_argument
from lightrft.domain.agent import ToolError, ToolSpec
from lightrft.domain.ports import CodeSandbox
from lightrft.domain.sandbox import SandboxLimits

MAX_CODE_CHARS = 16_384

SPEC = ToolSpec.one_string(
    "python",
    "Runs a Python program in a sandbox and returns what it prints.",
    "code",
    "a complete program",
)


def _tail(text: str, chars: int) -> str:
    return text if len(text) <= chars else "..." + text[-chars:]


class PythonTool:
    """The ``Tool`` port over a :class:`CodeSandbox` (see the module docstring)."""

    def __init__(
        self,
        sandbox: CodeSandbox,
        *,
        timeout_s: float = 5.0,
        memory_mb: int = 256,
        max_output_chars: int = 2000,
    ) -> None:
        self.sandbox = sandbox
        self.limits = SandboxLimits(wall_s=timeout_s, memory_mb=memory_mb)
        self.max_output_chars = max_output_chars

    @property
    def spec(self) -> ToolSpec:
        """Name ``python``, one string parameter ``code``."""
        return SPEC

    def call(self, arguments: Mapping[str, Any]) -> str:
        """The program's output; ToolError when it does not exit cleanly."""
        code = only_string_argument(arguments, "code", "python")
        if len(code) > MAX_CODE_CHARS:
            raise ToolError(f"program longer than {MAX_CODE_CHARS} characters")
        result = self.sandbox.run(code, limits=self.limits)
        if result.outcome == "passed":
            return _tail(result.stdout, self.max_output_chars)
        if result.outcome == "timeout":
            raise ToolError(f"program timed out after {self.limits.wall_s}s")
        if result.outcome == "memory":
            raise ToolError(f"program ran out of memory ({self.limits.memory_mb} MB)")
        detail = _tail(result.stderr.strip() or result.stdout.strip(), self.max_output_chars)
        raise ToolError(f"program {result.outcome} (exit {result.returncode}): {detail}")
