"""The chat check shared by RL prompt rows and SFT chat rows."""

from __future__ import annotations

import pytest

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.chat_check import check_chat


def _chat(*roles: str, content: str = "x") -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role in roles]


@pytest.mark.parametrize(
    "roles",
    [
        ("user",),
        ("system", "user"),
        ("system", "user", "assistant", "user"),
        ("user", "user", "assistant"),
        ("user", "assistant", "tool", "tool", "assistant"),
    ],
)
def test_valid_chats_pass(roles: tuple[str, ...]) -> None:
    check_chat(_chat(*roles), "f row 0", "messages")


@pytest.mark.parametrize(
    ("roles", "problem"),
    [
        (("assistant", "user"), "message 0 is 'assistant' before any user message"),
        (("system", "tool", "user"), "message 1 is 'tool' before any user message"),
        (("user", "system"), "message 1 is a system message after a 'user' message"),
        (("user", "assistant", "assistant"), "message 2 is 'assistant' after 'assistant'"),
        (("user", "tool"), "message 1 is 'tool' after 'user' (expected it after assistant"),
        (("user", "wizard"), "message 1 has unknown role 'wizard'"),
        (("system",), "no user message in the chat"),
    ],
)
def test_wrong_chats_name_the_message(roles: tuple[str, ...], problem: str) -> None:
    with pytest.raises(BadRowError, match="^f row 0: ") as info:
        check_chat(_chat(*roles), "f row 0", "messages")
    assert problem in str(info.value) and str(info.value).endswith("'messages'")


@pytest.mark.parametrize("empty", ["", "  \n", None])
def test_an_empty_assistant_turn_is_refused(empty: str | None) -> None:
    chat: list[dict[str, object]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": empty},
    ]
    with pytest.raises(BadRowError, match="message 1 is an empty assistant turn in 'messages'"):
        check_chat(chat, "f row 0", "messages")
    check_chat([{"role": "user", "content": ""}], "f row 0", "messages")  # users may be empty
