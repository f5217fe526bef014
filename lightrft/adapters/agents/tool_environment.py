"""``ToolEnvironment``: the model calls tools until it answers; the answer is graded.

Each model turn is parsed with the tool-call format (:mod:`lightrft.domain.tool_calls`):

- a plain answer (no call) ends the episode; it earns ``correct_reward`` when the grader
  finds it equals the prompt's reference, else ``wrong_reward`` (counter ``answers``);
- each call runs its tool on a thread of its own with a ``call_timeout_s`` deadline and its
  result becomes a ``tool`` message (counter ``tool_calls``);
- what goes wrong becomes an error message the model reads, and a counter, never an
  exception: a malformed call (``tool_errors/malformed``), an unknown tool
  (``tool_errors/unknown_tool``), a tool that raises (``tool_errors/tool_error``) and one
  that misses its deadline (``tool_errors/timeout``; its thread is abandoned).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from lightrft.domain.agent import (
    Action,
    AgentTimeoutError,
    ChatMessage,
    StepOutcome,
    Tool,
    ToolError,
)
from lightrft.domain.ports import AnswerGrader
from lightrft.domain.tool_calls import ToolCall, ToolCallFormat
from lightrft.domain.types import PromptRecord

MAX_RESULT_CHARS = 4000


def call_with_deadline(tool: Tool, call: ToolCall, timeout_s: float) -> str:
    """``tool.call(call.arguments)`` on a daemon thread; :class:`AgentTimeoutError` naming
    the tool when it has not returned within ``timeout_s``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = tool.call(call.arguments)
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            box["error"] = error

    thread = threading.Thread(target=run, name=f"tool-{call.name}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise AgentTimeoutError(f"tool {call.name!r} gave no result within {timeout_s}s")
    if "error" in box:
        raise box["error"]
    return str(box["value"])


class ToolEnvironment:
    """The ``Environment`` port over ``tools`` (see the module docstring)."""

    def __init__(
        self,
        tools: Sequence[Tool],
        tool_format: ToolCallFormat,
        grader: AnswerGrader,
        *,
        call_timeout_s: float = 10.0,
        correct_reward: float = 1.0,
        wrong_reward: float = 0.0,
        tool_role: str = "tool",
    ) -> None:
        if not call_timeout_s > 0:
            raise ValueError(f"call_timeout_s must be > 0, got {call_timeout_s}")
        self.tools = {t.spec.name: t for t in tools}
        if len(self.tools) != len(tools):
            raise ValueError(f"tool names repeat: {[t.spec.name for t in tools]}")
        self.format, self.grader = tool_format, grader
        self.call_timeout_s = call_timeout_s
        self.correct_reward, self.wrong_reward = correct_reward, wrong_reward
        self.tool_role = tool_role
        self.reference: str | None = None

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        """Remembers the prompt's reference; the first input is the prompt itself."""
        self.reference = prompt.reference
        return prompt

    def step(self, action: Action) -> StepOutcome:
        """Runs the turn's calls, or grades its answer (see the module docstring)."""
        parsed = self.format.parse(action.text)
        if parsed.error is not None:
            message = f"error: malformed tool call: {parsed.error}"
            return self._errors([message], {"tool_errors/malformed": 1.0})
        if parsed.is_answer:
            correct = bool(self.grader.grade(action.text, self.reference).correct)
            reward = self.correct_reward if correct else self.wrong_reward
            return StepOutcome((), reward=reward, done=True, counters={"answers": 1.0})
        messages: list[ChatMessage] = []
        counters: dict[str, float] = {"tool_calls": float(len(parsed.calls))}
        for call in parsed.calls:
            text, error = self._run(call)
            messages.append(ChatMessage(self.tool_role, text[:MAX_RESULT_CHARS], call.name))
            if error is not None:
                key = f"tool_errors/{error}"
                counters[key] = counters.get(key, 0.0) + 1.0
        return StepOutcome(tuple(messages), counters=counters)

    def _run(self, call: ToolCall) -> tuple[str, str | None]:
        """The call's result text and its error kind (``None``: it worked)."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return f"error: unknown tool {call.name!r}; tools: {known}", "unknown_tool"
        try:
            return call_with_deadline(tool, call, self.call_timeout_s), None
        except AgentTimeoutError as error:
            return f"error: {error}", "timeout"
        except ToolError as error:
            return f"error: {error}", "tool_error"
        except Exception as error:  # noqa: BLE001 - a broken tool must not end the run
            return f"error: tool {call.name!r} failed ({type(error).__name__})", "tool_error"

    def _errors(self, texts: list[str], counters: dict[str, float]) -> StepOutcome:
        messages = tuple(ChatMessage(self.tool_role, t) for t in texts)
        return StepOutcome(messages, counters=counters)

    def close(self) -> None:
        """Nothing held between turns."""
