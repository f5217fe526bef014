"""The reward model's task instruction (the original's --task_instruction) as the system
message, and per-head verdicts read from preference rows."""

from __future__ import annotations

import pytest

from lightrft.adapters.datasets import PromptRenderer
from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.preferences import PreferenceSpec, in_memory_preferences
from lightrft.adapters.datasets.task_instruction import TaskInstructionRenderer, prompt_text_of
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer

TEMPLATE = "Rate answers to: {prompt}. Keep {other} braces."


def test_instruction_is_the_system_message_with_the_prompt_in_place() -> None:
    renderer = TaskInstructionRenderer(tiny_tokenizer(), TEMPLATE)
    assert renderer.messages("2+2?") == [
        {"role": "system", "content": "Rate answers to: 2+2?. Keep {other} braces."},
        {"role": "user", "content": "2+2?"},
    ]
    chat = [
        {"role": "system", "content": "old"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "a cat"}]},
    ]
    messages = renderer.messages(chat)
    assert messages[0]["content"] == "Rate answers to: a cat. Keep {other} braces."
    assert [m["role"] for m in messages] == ["system", "user"]  # the row's system gives way
    assert prompt_text_of([{"role": "assistant", "content": "x"}]) == ""


def test_head_verdicts_are_read_in_the_original_letters() -> None:
    rows = [
        {"prompt": "p", "chosen": "a", "rejected": "b", "labels": {"pref": "A", "align": "B"}},
        {"prompt": "p", "chosen": "a", "rejected": "b", "labels": {"pref": "C"}},
        {"prompt": "p", "chosen": "a", "rejected": "b"},
    ]
    spec = PreferenceSpec(head_labels_key="labels")
    pairs, _ = in_memory_preferences(rows, PromptRenderer(tiny_tokenizer()), spec)
    assert [dict(p.head_labels) for p in pairs] == [
        {"pref": "chosen", "align": "rejected"},
        {"pref": "tie"},
        {},
    ]
    bad = [{**rows[0], "labels": {"pref": "D"}}]
    with pytest.raises(BadRowsError, match="rows row 0: head 'pref': expected A, B, C"):
        in_memory_preferences(bad, PromptRenderer(tiny_tokenizer()), spec)
