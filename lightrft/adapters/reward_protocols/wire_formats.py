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
"""

from __future__ import annotations

import base64
import io
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from lightrft.adapters.reward_parts.openrlhf_rewards import openrlhf_rewards
from lightrft.domain.types import RewardSample


class WireFormat(ABC):
    """One framework's request body and answer."""

    name: ClassVar[str]

    @abstractmethod
    def body(self, samples: Sequence[RewardSample]) -> dict[str, Any]:
        """The JSON body that asks for the scores of ``samples``."""

    def read(self, answer: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        """(``count`` raw rewards, metrics) of the answer; ``ValueError`` with a one-line
        reason when it is malformed."""
        return openrlhf_rewards(answer, count, bare_allowed=False)


def texts(samples: Sequence[RewardSample]) -> tuple[list[str], list[str], list[str | None]]:
    """(queries: prompt + response, prompts, references) of ``samples``."""
    prompts = [sample.prompt.prompt_text for sample in samples]
    queries = [p + sample.completion.text for p, sample in zip(prompts, samples, strict=True)]
    return queries, prompts, [sample.prompt.reference for sample in samples]


class OpenRlhfWire(WireFormat):
    name = "openrlhf"

    def body(self, samples: Sequence[RewardSample]) -> dict[str, Any]:
        queries, prompts, labels = texts(samples)
        return {"query": queries, "prompts": prompts, "labels": labels}


class OriginalWire(WireFormat):
    name = "original"

    def body(self, samples: Sequence[RewardSample]) -> dict[str, Any]:
        queries, prompts, references = texts(samples)
        body: dict[str, Any] = {"queries": queries, "prompts": prompts, "references": references}
        images = [sample.prompt.multimodal.get("images") for sample in samples]
        if any(images):
            body["images"] = [[jpeg_base64(image) for image in i] if i else None for i in images]
        return body


def jpeg_base64(image: Any) -> str:
    """A PIL image as base64 JPEG (RGBA and other modes converted to RGB first), as the
    original LightRFT sends it."""
    buffer = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(buffer, format="JPEG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


WIRE_FORMATS: dict[str, WireFormat] = {w.name: w for w in (OpenRlhfWire(), OriginalWire())}
"""The formats by ``reward.sources[].protocol``."""
