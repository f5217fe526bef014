"""The agent demo's task rows and warm-up chats."""

from __future__ import annotations

import json

import pytest

from lightrft.adapters.datasets.tool_arithmetic import (
    tool_problems,
    tool_use_trace,
    warm_up_traces,
)


def test_problems_are_products_with_their_reference() -> None:
    rows = tool_problems(20, seed=3)
    assert rows == tool_problems(20, seed=3) and rows != tool_problems(20, seed=4)
    for row in rows:
        a, b = row["prompt"].removeprefix("What is ").removesuffix("?").split(" * ")
        assert 100 <= int(a) <= 999 and 11 <= int(b) <= 99
        assert row["reference"] == str(int(a) * int(b))


@pytest.mark.parametrize(("fraction", "calls"), [(0.0, 0), (0.25, 3), (0.5, 6), (1.0, 12)])
def test_warm_up_mixes_tool_chats_and_direct_answers(fraction: float, calls: int) -> None:
    rows = tool_problems(12, seed=0)
    traces = warm_up_traces(rows, fraction, seed=7)
    assert traces == warm_up_traces(rows, fraction, seed=7)
    with_tool = [t for t in traces if any(m["role"] == "tool" for m in t["messages"])]
    assert len(with_tool) == calls
    for row, trace in zip(rows, traces, strict=True):
        assert trace["messages"][1]["content"] == row["prompt"]
        assert trace["messages"][-1]["content"] == f"The answer is {row['reference']}."
        if trace in with_tool:
            assert trace == tool_use_trace(row)
            call = trace["messages"][2]["content"]
            payload = json.loads(call.removeprefix("<tool_call>").removesuffix("</tool_call>"))
            assert payload["arguments"]["expression"] in row["prompt"]
        else:
            assert [m["role"] for m in trace["messages"]] == ["system", "user", "assistant"]


def test_a_fraction_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_fraction must be in"):
        warm_up_traces(tool_problems(2, seed=0), 1.5, seed=0)
