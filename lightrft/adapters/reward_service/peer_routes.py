"""The reward service's answers to other frameworks' reward clients (OpenRLHF's
``--remote_rm_url``, the original LightRFT's ``remote_rm_fn``).

A peer format (the wire formats of ``lightrft.adapters.reward_protocols``, injected by the
caller of ``create_app``: this package imports no other adapter package) reads a request body
as texts and writes the answer; :func:`peer_samples` turns the texts into the service's wire
samples, so a peer's request is scored exactly as ``/score``'s: same limits (body bytes,
``max_batch``, deadlines, media), same micro-batcher, same source. A body that is not JSON or
that the format refuses is 422 with one line (``invalid openrlhf request: query[2] does not
start with prompts[2]``). Peers send no token ids: each sample has the placeholder prompt ids
of :mod:`~lightrft.adapters.reward_service.protocol`; the original's base64 images go through
the media limits as ``{"base64": ...}`` items.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from fastapi import HTTPException, Request, Response

from lightrft.adapters.reward_service.media import WireMedia
from lightrft.adapters.reward_service.protocol import WireSample

Parsed = tuple[list[WireSample], str | None]
"""A request's wire samples and its request id (peers send none)."""
Scored = Callable[
    [Request, Callable[[bytes], Parsed]], Awaitable[tuple[list[float], dict[str, float]] | Response]
]
"""The service's scoring of a request: (request, body parser) -> (scores, metrics), or the
response that ends it early (its client left)."""


class PeerTexts(Protocol):
    """A peer's request as texts, one entry per sample (base64 images, or None)."""

    @property
    def prompts(self) -> list[str]: ...

    @property
    def responses(self) -> list[str]: ...

    @property
    def references(self) -> list[str | None]: ...

    @property
    def images(self) -> list[list[str] | None]: ...


class PeerFormat(Protocol):
    """What the service needs of a peer's wire format."""

    @property
    def name(self) -> str: ...

    def parse(self, body: Any) -> PeerTexts: ...

    def answer(self, scores: list[float]) -> dict[str, Any]: ...


def peer_samples(peer: PeerFormat, body: bytes) -> Parsed:
    """The wire samples of a peer's request body; 422 with one line when it is malformed."""
    try:
        texts = peer.parse(json.loads(body))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise HTTPException(422, f"invalid {peer.name} request: the body is not JSON") from None
    except ValueError as error:
        raise HTTPException(422, f"invalid {peer.name} request: {error}") from None
    samples = [
        WireSample(
            prompt=prompt,
            response=response,
            reference=reference,
            images=[WireMedia(base64=item) for item in images] if images else None,
        )
        for prompt, response, reference, images in zip(
            texts.prompts, texts.responses, texts.references, texts.images, strict=True
        )
    ]
    return samples, None


def peer_endpoint(peer: PeerFormat, scored: Scored) -> Callable[[Request], Awaitable[Any]]:
    """The route handler answering ``peer``'s requests."""

    async def get_reward(request: Request) -> Any:
        outcome = await scored(request, lambda body: peer_samples(peer, body))
        return outcome if isinstance(outcome, Response) else peer.answer(outcome[0])

    get_reward.__name__ = f"get_reward_{peer.name}"
    return get_reward
