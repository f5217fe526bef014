"""ToolEnvironment: calls, answers, and every failure as an error observation + counter."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from lightrft.adapters.agents.calculator import CalculatorTool
from lightrft.adapters.agents.python_tool import PythonTool
from lightrft.adapters.agents.tool_environment import ToolEnvironment
from lightrft.adapters.sandbox import ProcessSandbox, open_sandbox
from lightrft.domain.agent import Action, Environment, ToolError, ToolSpec
from lightrft.domain.eval_metrics import GradedAnswer
from lightrft.domain.tool_calls import TOOL_CALL_FORMATS
from lightrft.domain.types import PromptRecord

HERMES = TOOL_CALL_FORMATS.get("hermes")


class LastNumberGrader:
    def grade(self, response: str, reference: str | None) -> GradedAnswer:
        words = [w.strip(".") for w in response.split() if w.strip(".").lstrip("-").isdigit()]
        key = words[-1] if words else None
        return GradedAnswer(key, None if reference is None else key == reference)


class SlowTool:
    def __init__(self, release: threading.Event) -> None:
        self.release = release

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("slow", "waits", {"type": "object"})

    def call(self, arguments: Mapping[str, Any]) -> str:
        self.release.wait()
        return "late"


class BrokenTool:
    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("broken", "raises", {"type": "object"})

    def call(self, arguments: Mapping[str, Any]) -> str:
        raise KeyError("internal")


def env(*extra: Any, timeout: float = 2.0) -> ToolEnvironment:
    e = ToolEnvironment(
        [CalculatorTool(), *extra], HERMES, LastNumberGrader(), call_timeout_s=timeout
    )
    assert isinstance(e, Environment)
    e.reset(PromptRecord("p", "what is 12*34?", (1,), reference="408"))
    return e


def act(text: str) -> Action:
    return Action((5,), text, "stop")


def call(name: str, **arguments: Any) -> str:
    import json

    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_a_call_returns_the_tool_result_and_an_answer_is_graded() -> None:
    e = env()
    out = e.step(act(call("calculator", expression="12*34")))
    assert not out.done and out.reward == 0.0
    assert [(m.role, m.content, m.name) for m in out.observation] == [("tool", "408", "calculator")]
    assert out.counters == {"tool_calls": 1.0}
    right = e.step(act("The answer is 408."))
    assert right.done and right.reward == 1.0 and right.observation == ()
    assert right.counters == {"answers": 1.0}
    assert e.step(act("It is 407.")).reward == 0.0


@pytest.mark.parametrize(
    ("text", "counter", "message"),
    [
        ("<tool_call>{bad json</tool_call>", "tool_errors/malformed", "malformed tool call"),
        (call("search", q="x"), "tool_errors/unknown_tool", "unknown tool 'search'"),
        (call("calculator", expression="1/0"), "tool_errors/tool_error", "division by zero"),
        (call("broken"), "tool_errors/tool_error", "failed (KeyError)"),
    ],
)
def test_failures_become_error_observations_and_counters(
    text: str, counter: str, message: str
) -> None:
    out = env(BrokenTool()).step(act(text))
    assert not out.done and out.counters[counter] == 1.0
    assert len(out.observation) == 1 and out.observation[0].content.startswith("error: ")
    assert message in out.observation[0].content


def test_a_tool_past_its_deadline_is_a_timeout_observation_not_a_hang() -> None:
    release = threading.Event()
    start = time.monotonic()
    try:
        out = env(SlowTool(release), timeout=0.3).step(act(call("slow")))
    finally:
        release.set()
    assert time.monotonic() - start < 10.0
    assert out.counters == {"tool_calls": 1.0, "tool_errors/timeout": 1.0}
    assert "gave no result within 0.3s" in out.observation[0].content


def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(ValueError, match="repeat"):
        ToolEnvironment([CalculatorTool(), CalculatorTool()], HERMES, LastNumberGrader())


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ProcessSandbox]:
    yield open_sandbox()


def test_python_tool_runs_code_in_the_sandbox(sandbox: ProcessSandbox) -> None:
    tool = PythonTool(sandbox, timeout_s=3.0)
    assert tool.call({"code": "print(sum(range(10)))"}).strip() == "45"
    with pytest.raises(ToolError, match="ZeroDivisionError"):
        tool.call({"code": "1/0"})
    with pytest.raises(ToolError, match="timed out"):
        PythonTool(sandbox, timeout_s=2.0).call({"code": "while True: pass"})
    with pytest.raises(ToolError, match="one string argument"):
        tool.call({"program": "x"})


def test_python_tool_errors_reach_the_model_as_observations(sandbox: ProcessSandbox) -> None:
    e = env(PythonTool(sandbox, timeout_s=3.0))
    out = e.step(
        act(
            call(
                "python", code="import socket; socket.create_connection(('1.1.1.1', 80), timeout=1)"
            )
        )
    )
    assert out.counters.get("tool_errors/tool_error") == 1.0
    assert out.observation[0].content.startswith("error: program")
