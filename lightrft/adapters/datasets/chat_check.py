"""The check of a chat (a list of ``{role, content}`` messages) shared by every row loader.

RL prompt rows and SFT chat rows are refused (as bad rows naming the message) for the same
reasons: a message that is not ``{role, content}``, a role outside :data:`CHAT_ROLES`, roles
out of order, or an empty assistant turn. The order every chat template accepts:

- ``system`` only as the first message;
- the first other message is the user's;
- an ``assistant`` message answers a ``user`` or ``tool`` message;
- a ``tool`` message answers an ``assistant`` message (or another tool message).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError

CHAT_ROLES = ("system", "user", "assistant", "tool")

ANSWERS: dict[str, tuple[str, ...]] = {
    "assistant": ("user", "tool"),
    "tool": ("assistant", "tool"),
}
"""Roles that must follow one of the given roles."""


def check_chat(messages: list[Any], where: str, key: str) -> None:
    """Raises :class:`BadRowError` naming the first wrong message of ``messages`` (see the
    module docstring); a chat needs at least one user message."""
    previous: str | None = None
    for i, message in enumerate(messages):
        if not (isinstance(message, Mapping) and "role" in message and "content" in message):
            raise BadRowError(where, key, f"message {i} is not {{'role', 'content'}} in")
        role = message["role"]
        if role not in CHAT_ROLES:
            raise BadRowError(
                where,
                key,
                f"message {i} has unknown role {role!r} (expected {', '.join(CHAT_ROLES)}) in",
            )
        _check_order(i, role, previous, where, key)
        if role == "assistant" and _empty(message["content"]):
            raise BadRowError(where, key, f"message {i} is an empty assistant turn in")
        previous = role
    if not any(message["role"] == "user" for message in messages):
        raise BadRowError(where, key, "no user message in the chat")


def _check_order(i: int, role: str, previous: str | None, where: str, key: str) -> None:
    if role == "system" and previous is not None:
        problem = f"message {i} is a system message after a {previous!r} message (expected "
        raise BadRowError(where, key, problem + "system only first) in")
    if previous in (None, "system") and role != "user" and role != "system":
        raise BadRowError(
            where, key, f"message {i} is {role!r} before any user message (expected user) in"
        )
    allowed = ANSWERS.get(role)
    if allowed is not None and previous is not None and previous not in allowed:
        raise BadRowError(
            where,
            key,
            f"message {i} is {role!r} after {previous!r} (expected it after "
            f"{' or '.join(allowed)}) in",
        )


def _empty(content: Any) -> bool:
    if isinstance(content, str):
        return not content.strip()
    return content is None or (isinstance(content, list) and not content)
