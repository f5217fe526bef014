"""The JSON of the environment service protocol, both directions (client and server).

``POST /reset`` ``{"episode": id, "prompt": {uid, prompt_text, prompt_token_ids, reference,
metadata}}`` -> ``{"prompt_token_ids": [...], "prompt_text": ...}`` (both optional: absent,
the prompt is kept); ``POST /step`` ``{"episode": id, "turn": k, "action": {token_ids, text,
finish_reason}}`` -> ``{"observation": [{role, content, name, images}], "reward": x, "done": b,
"counters": {...}}``; ``POST /close`` ``{"episode": id}`` -> ``{}``. A step is idempotent per
``(episode, turn)``: a retried request gets the first answer again, never a second step.

A message's ``images`` (optional) is a list of base64 strings, each an encoded image file
(PNG, JPEG ...), at most :data:`MAX_WIRE_IMAGES` a message and :data:`MAX_WIRE_IMAGE_BYTES`
decoded each (and the whole answer within the client's ``max_response_bytes``); the policy's
renderer decodes and bounds them further (a text policy refuses them).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from lightrft.adapters.http_client.retry import CallFailed
from lightrft.domain.agent import Action, ChatMessage, StepOutcome
from lightrft.domain.types import PromptRecord

MAX_WIRE_IMAGES = 8
MAX_WIRE_IMAGE_BYTES = 4 * 2**20


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
        "observation": [_message_to_wire(m) for m in outcome.observation],
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
    observation = tuple(
        ChatMessage(m["role"], m["content"], m.get("name"), _images_from_wire(m, i, where))
        for i, m in enumerate(messages)
    )
    return StepOutcome(
        observation,
        reward=float(reward),
        done=done,
        counters={str(k): float(v) for k, v in counters.items()},
    )


def _message_to_wire(m: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content, "name": m.name}
    if m.images:
        out["images"] = [base64.b64encode(_image_bytes(item)).decode() for item in m.images]
    return out


def _image_bytes(item: Any) -> bytes:
    """An observation image as encoded bytes (a PIL image as PNG, a path's file)."""
    if isinstance(item, bytes | bytearray):
        return bytes(item)
    if isinstance(item, str | Path):
        return Path(item).read_bytes()
    out = io.BytesIO()
    item.save(out, format="PNG")  # a PIL image
    return out.getvalue()


def _images_from_wire(m: Mapping[str, Any], index: int, where: str) -> tuple[bytes, ...]:
    """The decoded ``images`` of observation message ``index``; CallFailed naming it."""
    images = m.get("images")
    if images is None:
        return ()
    if not isinstance(images, list) or not all(isinstance(x, str) for x in images):
        raise CallFailed(
            f"{where} sent observation message {index} 'images' that is not a list of base64 strings"
        )
    if len(images) > MAX_WIRE_IMAGES:
        raise CallFailed(
            f"{where} sent observation message {index} with {len(images)} images, more than "
            f"{MAX_WIRE_IMAGES}"
        )
    out = []
    for j, text in enumerate(images):
        if len(text) > (MAX_WIRE_IMAGE_BYTES * 4) // 3 + 4:
            raise CallFailed(
                f"{where} sent observation message {index} image {j} larger than "
                f"{MAX_WIRE_IMAGE_BYTES} bytes"
            )
        try:
            out.append(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raise CallFailed(
                f"{where} sent observation message {index} image {j} that is not base64"
            ) from None
    return tuple(out)


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
