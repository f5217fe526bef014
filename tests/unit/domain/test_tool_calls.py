"""Strict tool-call parsing: Hermes blocks and whole-turn JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.tool_calls import (
    MAX_CALL_CHARS,
    TOOL_CALL_FORMATS,
    ToolCall,
    format_hermes_call,
    parse_hermes,
    parse_json,
)


def test_hermes_call_with_text_around_it() -> None:
    text = 'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2*3"}}\n</tool_call>'
    parsed = parse_hermes(text)
    assert parsed.error is None and not parsed.is_answer
    assert parsed.calls == (ToolCall("calculator", {"expression": "2*3"}),)


def test_plain_text_is_an_answer() -> None:
    assert parse_hermes("The answer is 42.").is_answer
    assert parse_json("The answer is 42.").is_answer


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<tool_call>{}", "unbalanced"),
        ("<tool_call>not json</tool_call>", "not valid JSON"),
        ("<tool_call>[1, 2]</tool_call>", "JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', '"name"'),
        ('<tool_call>{"name": 3}</tool_call>', '"name"'),
        ('<tool_call>{"name": "f", "arguments": [1]}</tool_call>', "must be a JSON object"),
        ('<tool_call>{"name": "f", "code": "x"}</tool_call>', "unknown keys"),
        ("</tool_call>", "unbalanced"),
    ],
)
def test_malformed_hermes_calls_say_why(text: str, reason: str) -> None:
    parsed = parse_hermes(text)
    assert parsed.calls == () and parsed.error is not None and reason in parsed.error


def test_json_format_reads_parameters_or_arguments() -> None:
    call = parse_json('{"name": "python", "parameters": {"code": "print(1)"}}')
    assert call.calls == (ToolCall("python", {"code": "print(1)"}),)
    assert parse_json('  {"name": "f", "arguments": {}}').calls == (ToolCall("f", {}),)
    assert parse_json("{oops").error is not None


def test_oversized_and_deeply_nested_calls_are_malformed_not_crashes() -> None:
    long = (
        '<tool_call>{"name": "f", "arguments": {"x": "' + "a" * MAX_CALL_CHARS + '"}}</tool_call>'
    )
    assert "longer than" in (parse_hermes(long).error or "")
    deep = "<tool_call>" + "[" * 5000 + "]" * 5000 + "</tool_call>"
    assert parse_hermes(deep).error is not None


def test_formats_are_registered_with_their_stop_strings() -> None:
    assert TOOL_CALL_FORMATS.names() == ("hermes", "json")
    assert TOOL_CALL_FORMATS.get("hermes").stop_strings == ("</tool_call>",)
    assert TOOL_CALL_FORMATS.get("json").stop_strings == ()


names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(names, st.dictionaries(names, values, max_size=4), st.text(max_size=30))
def test_hermes_round_trip(name: str, arguments: dict[str, object], prefix: str) -> None:
    call = ToolCall(name, arguments)
    text = prefix.replace("<", "") + format_hermes_call(call)
    parsed = parse_hermes(text)
    assert parsed.calls == (call,)
    assert json.loads(json.dumps(parsed.calls[0].arguments)) == arguments


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_parsers_never_raise(text: str) -> None:
    for fmt in TOOL_CALL_FORMATS:
        parsed = TOOL_CALL_FORMATS.get(fmt).parse(text)
        assert not (parsed.calls and parsed.error)
