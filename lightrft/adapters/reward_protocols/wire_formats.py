"""The request bodies and answers of the reward servers of other frameworks.

- ``openrlhf`` (OpenRLHF, ``openrlhf/utils/remote_rm_utils.py`` and ``openrlhf/utils/agent.py``;
  its server ``openrlhf/cli/serve_rm.py``): POST ``{"query": [prompt + response, ...],
  "prompts": [prompt, ...], "labels": [label, ...]}`` to the URL given; the answer is an
  object with ``"rewards"`` (one per query), since v0.8 also ``"scores"`` and
  ``"extra_logs"`` (:mod:`~lightrft.adapters.reward_parts.openrlhf_rewards`).
- ``original`` (the original LightRFT, ``lightrft/utils/remote_rm_utils.py``,
  ``remote_rm_fn``): POST ``{"queries": [...], "prompts": [...], "references": [...]}``, and
  ``"images"`` (per sample a list of base64 JPEGs, or null) when a sample has images; the
  answer is an object with ``"rewards"``.

Queries are the rendered prompt followed by the response text (both frameworks decode the
whole sequence); labels / references are the prompts' references (null where a prompt has
none). Both send every sample of a request in one body.

The same formats, read from the other end, are what ``serve-reward`` answers on
``served_paths`` (:meth:`WireFormat.parse` a peer's request, :meth:`WireFormat.answer` it):
the response is the query minus its prompt (a query that does not start with its prompt is
refused, naming its index); without ``prompts`` (OpenRLHF before v0.5 sent the queries
alone) each prompt is empty and the response the whole query. Keys the reader does not know
are ignored (peers add fields across versions); labels may be strings, numbers (read as their
JSON text) or null.
"""

from __future__ import annotations

import base64
import io
import json
from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from lightrft.adapters.reward_parts.openrlhf_rewards import openrlhf_rewards
from lightrft.domain.types import RewardSample


@dataclass(frozen=True)
class PeerRequest:
    """A peer's request as texts, one entry per sample: base64 images (the original's) or
    None per sample."""

    prompts: list[str]
    responses: list[str]
    references: list[str | None]
    images: list[list[str] | None]


class WireFormat(ABC):
    """One framework's request body and answer, from both ends."""

    name: ClassVar[str]
    keys: ClassVar[tuple[str, str]]
    """The body's (queries, references) keys; ``"prompts"`` is the same in both."""
    served_paths: ClassVar[tuple[str, ...]]
    """Where ``serve-reward`` answers this format."""

    def body(self, samples: Sequence[RewardSample]) -> dict[str, Any]:
        """The JSON body that asks for the scores of ``samples``."""
        queries, prompts, references = texts(samples)
        queries_key, references_key = self.keys
        return {queries_key: queries, "prompts": prompts, references_key: references}

    def read(self, answer: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        """(``count`` raw rewards, metrics) of the answer; ``ValueError`` with a one-line
        reason when it is malformed."""
        return openrlhf_rewards(answer, count, bare_allowed=False)

    def parse(self, body: Any) -> PeerRequest:
        """A peer's request body (decoded JSON) as texts; ``ValueError`` with a one-line
        reason naming the key and index when it is malformed (module docstring)."""
        queries_key, references_key = self.keys
        if not isinstance(body, Mapping):
            raise ValueError(f"expected a JSON object with {queries_key!r}")
        queries = _strings(body, queries_key, None)
        count = len(queries)
        given = body.get("prompts") is not None
        prompts = _strings(body, "prompts", count) if given else [""] * count
        for i, (query, prompt) in enumerate(zip(queries, prompts, strict=True)):
            if not query.startswith(prompt):
                raise ValueError(f"{queries_key}[{i}] does not start with prompts[{i}]")
        references: list[str | None] = [None] * count
        if body.get(references_key) is not None:
            labels = _list(body, references_key, count)
            references = [_label(v, references_key, i) for i, v in enumerate(labels)]
        return PeerRequest(
            prompts,
            [q[len(p) :] for q, p in zip(queries, prompts, strict=True)],
            references,
            self.images(body, count),
        )

    def images(self, body: Mapping[str, Any], count: int) -> list[list[str] | None]:
        """Per sample the base64 images of the request (none in this format)."""
        return [None] * count

    def answer(self, scores: list[float]) -> dict[str, Any]:
        """The answer body of ``scores``."""
        return {"rewards": scores}


def texts(samples: Sequence[RewardSample]) -> tuple[list[str], list[str], list[str | None]]:
    """(queries: prompt + response, prompts, references) of ``samples``."""
    prompts = [sample.prompt.prompt_text for sample in samples]
    queries = [p + sample.completion.text for p, sample in zip(prompts, samples, strict=True)]
    return queries, prompts, [sample.prompt.reference for sample in samples]


class OpenRlhfWire(WireFormat):
    name = "openrlhf"
    keys = ("query", "labels")
    served_paths = ("/get_reward", "/openrlhf/get_reward")  # /get_reward: OpenRLHF's serve_rm

    def answer(self, scores: list[float]) -> dict[str, Any]:
        """OpenRLHF's serve_rm answer: ``scores`` (its dynamic-filtering score) are the
        rewards, ``extra_logs`` empty (the source's metrics are per batch, not per sample)."""
        return {"rewards": scores, "scores": scores, "extra_logs": {}}


class OriginalWire(WireFormat):
    name = "original"
    keys = ("queries", "references")
    served_paths = ("/original/get_reward",)

    def body(self, samples: Sequence[RewardSample]) -> dict[str, Any]:
        body = super().body(samples)
        images = [sample.prompt.multimodal.get("images") for sample in samples]
        if any(images):
            body["images"] = [[jpeg_base64(image) for image in i] if i else None for i in images]
        return body

    def images(self, body: Mapping[str, Any], count: int) -> list[list[str] | None]:
        if body.get("images") is None:
            return [None] * count
        out: list[list[str] | None] = []
        for i, item in enumerate(_list(body, "images", count)):
            if item is not None and not (
                isinstance(item, list) and all(isinstance(b, str) for b in item)
            ):
                raise ValueError(f"images[{i}] must be a list of base64 strings or null")
            out.append(item or None)
        return out


def _list(body: Mapping[str, Any], key: str, count: int | None) -> list[Any]:
    """``body[key]`` as a list of ``count`` entries (a non-empty one when ``count`` is None)."""
    value = body.get(key)
    if not isinstance(value, list) or (count is None and not value):
        raise ValueError(f"{key!r} must be a non-empty list, got {json.dumps(value)[:40]}")
    if count is not None and len(value) != count:
        raise ValueError(f"{key!r} has {len(value)} entries for {count} queries")
    return value


def _strings(body: Mapping[str, Any], key: str, count: int | None) -> list[str]:
    values = _list(body, key, count)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"{key}[{i}] must be a string, got {type(value).__name__}")
    return values


def _label(value: Any, key: str, index: int) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    raise ValueError(f"{key}[{index}] must be a string, a number or null")


def jpeg_base64(image: Any) -> str:
    """A PIL image as base64 JPEG (RGBA and other modes converted to RGB first), as the
    original LightRFT sends it."""
    buffer = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(buffer, format="JPEG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


WIRE_FORMATS: dict[str, WireFormat] = {w.name: w for w in (OpenRlhfWire(), OriginalWire())}
"""The formats by ``reward.sources[].protocol``."""

SERVED_PATHS: dict[str, WireFormat] = {
    path: wire for wire in WIRE_FORMATS.values() for path in wire.served_paths
}
"""``serve-reward``'s peer paths: path -> the format answered there."""
