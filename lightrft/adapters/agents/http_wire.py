"""The JSON of the environment service protocol, both directions (client and server).

``POST /reset`` ``{"episode": id, "prompt": {uid, prompt_text, prompt_token_ids, reference,
metadata}}`` -> ``{"prompt_token_ids": [...], "prompt_text": ...}`` (both optional: absent,
the prompt is kept); ``POST /step`` ``{"episode": id, "turn": k, "action": {token_ids, text,
finish_reason}}`` -> ``{"observation": [{role, content, name}], "reward": x, "done": b,
"counters": {...}}``; ``POST /close`` ``{"episode": id}`` -> ``{}``. A step is idempotent per
``(episode, turn)``: a retried request gets the first answer again, never a second step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from lightrft.adapters.http_client.retry import CallFailed
from lightrft.domain.agent import Action, ChatMessage, StepOutcome
from lightrft.domain.types import PromptRecord


def prompt_to_wire(prompt: PromptRecord) -> dict[str, Any]:
    return {
        "uid": prompt.uid,
        "prompt_text": prompt.prompt_text,
        "prompt_token_ids": list(prompt.prompt_token_ids),
        "reference": prompt.reference,
        "metadata": {k: v for k, v in prompt.metadata.items() if _jsonable(v)},
    }


def prompt_from_wire(body: Mapping[str, Any]) -> PromptRecord:
    return PromptRecord(
        uid=str(body["uid"]),
        prompt_text=str(body["prompt_text"]),
        prompt_token_ids=tuple(int(t) for t in body["prompt_token_ids"]),
        reference=body.get("reference"),
        metadata=dict(body.get("metadata") or {}),
    )


def first_input_from_wire(body: Any, prompt: PromptRecord, where: str) -> PromptRecord:
    """The reset answer applied to ``prompt``; CallFailed when it is malformed."""
    if not isinstance(body, dict):
        raise CallFailed(f"{where} sent a reset answer that is not an object")
    ids = body.get("prompt_token_ids")
    if ids is None:
        return prompt
    if not isinstance(ids, list) or not ids or not all(_is_int(t) for t in ids):
        raise CallFailed(f"{where} sent prompt_token_ids that are not a non-empty int list")
    text = body.get("prompt_text", prompt.prompt_text)
    return replace(prompt, prompt_token_ids=tuple(ids), prompt_text=str(text))


def action_to_wire(action: Action) -> dict[str, Any]:
    return {
        "token_ids": list(action.token_ids),
        "text": action.text,
        "finish_reason": action.finish_reason,
    }


def action_from_wire(body: Mapping[str, Any]) -> Action:
    return Action(
        tuple(int(t) for t in body["token_ids"]), str(body["text"]), body["finish_reason"]
    )


def outcome_to_wire(outcome: StepOutcome) -> dict[str, Any]:
    return {
        "observation": [
            {"role": m.role, "content": m.content, "name": m.name} for m in outcome.observation
        ],
        "reward": outcome.reward,
        "done": outcome.done,
        "counters": dict(outcome.counters),
    }


def outcome_from_wire(body: Any, where: str) -> StepOutcome:
    """A :class:`StepOutcome` from a step answer; CallFailed naming what is wrong."""
    if not isinstance(body, dict):
        raise CallFailed(f"{where} sent a step answer that is not an object")
    reward, done = body.get("reward", 0.0), body.get("done")
    if not _is_number(reward) or not math.isfinite(reward):
        raise CallFailed(f"{where} sent a reward that is not a finite number: {reward!r}")
    if not isinstance(done, bool):
        raise CallFailed(f"{where} sent no boolean 'done'")
    messages = body.get("observation", [])
    if not isinstance(messages, list) or not all(_is_message(m) for m in messages):
        raise CallFailed(f"{where} sent an observation that is not a list of messages")
    counters = body.get("counters", {})
    if not isinstance(counters, dict) or not all(_is_number(v) for v in counters.values()):
        raise CallFailed(f"{where} sent counters that are not numbers")
    return StepOutcome(
        tuple(ChatMessage(m["role"], m["content"], m.get("name")) for m in messages),
        reward=float(reward),
        done=done,
        counters={str(k): float(v) for k, v in counters.items()},
    )


def _is_message(m: Any) -> bool:
    return (
        isinstance(m, dict)
        and isinstance(m.get("role"), str)
        and isinstance(m.get("content"), str)
        and (m.get("name") is None or isinstance(m.get("name"), str))
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _jsonable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None
