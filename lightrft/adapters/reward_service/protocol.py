"""The reward service's wire format (JSON over HTTP), shared by server and client.

``POST /score`` takes ``{"samples": [{"prompt", "response", "reference"?, "uid"?,
"prompt_token_ids"?, "response_token_ids"?, "finish_reason"?}]}`` and answers
``{"scores": [float, ...], "metrics": {name: float}}``, one score per sample in order.
``GET /health`` answers ``{"status": "ok", "source": name}``.

Sources behind the service judge text: the prompt as rendered for the policy and the
response. Token ids travel when the client sends them (``RemoteRewardSource`` does); a
request without them gets a one-token placeholder prompt and an empty response token list,
so a served source that reads token ids must be called with them.

Samples for vision- and audio-language reward models carry ``images`` / ``audios``: lists
of ``{"path": ...}`` or ``{"base64": ...}`` items (limits and the allowed root:
:mod:`~lightrft.adapters.reward_service.media`), one placeholder per item in the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lightrft.adapters.reward_service.media import WireMedia
from lightrft.domain.types import Completion, PromptRecord, RewardSample

PLACEHOLDER_PROMPT_TOKENS = (0,)


class WireSample(BaseModel):
    """One (prompt, response) to score."""

    model_config = ConfigDict(extra="forbid")

    prompt: str
    response: str
    reference: str | None = None
    uid: str = ""
    prompt_token_ids: list[int] | None = None
    response_token_ids: list[int] | None = None
    finish_reason: Literal["stop", "length"] = "stop"
    images: list[WireMedia] | None = None
    audios: list[WireMedia] | None = None

    def to_sample(self, multimodal: Mapping[str, Any] | None = None) -> RewardSample:
        """The domain sample (see the module docstring for missing token ids), with the
        decoded media of ``images`` / ``audios`` when given."""
        prompt_ids = tuple(self.prompt_token_ids or PLACEHOLDER_PROMPT_TOKENS)
        record = PromptRecord(
            self.uid, self.prompt, prompt_ids, reference=self.reference,
            multimodal=dict(multimodal or {}),
        )  # fmt: skip
        response_ids = tuple(self.response_token_ids or ())
        return RewardSample(record, Completion(0, response_ids, self.response, self.finish_reason))


class ScoreRequest(BaseModel):
    """A batch of samples."""

    model_config = ConfigDict(extra="forbid")

    samples: list[WireSample] = Field(min_length=1)
    request_id: str | None = Field(
        None,
        max_length=128,
        description="The client's id of this request, the same on every retry: a retry is "
        "answered from the first attempt's scoring (request_memo.py), never scored twice.",
    )


class ScoreResponse(BaseModel):
    """Scores in request order and the source's metrics for the batch that scored them."""

    scores: list[float]
    metrics: dict[str, float] = Field(default_factory=dict)


def wire_samples(samples: Sequence[RewardSample]) -> list[dict[str, object]]:
    """JSON-ready samples for a request (token ids included)."""
    return [
        {
            "prompt": s.prompt.prompt_text,
            "response": s.completion.text,
            "reference": s.prompt.reference,
            "uid": s.prompt.uid,
            "prompt_token_ids": list(s.prompt.prompt_token_ids),
            "response_token_ids": list(s.completion.token_ids),
            "finish_reason": s.completion.finish_reason,
        }
        for s in samples
    ]
