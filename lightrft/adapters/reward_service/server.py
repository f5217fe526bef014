"""The HTTP reward service: any ``RewardSource`` behind FastAPI, run by uvicorn.

``create_app(source)`` builds the app: ``POST /score`` (micro-batched across concurrent
requests, :mod:`~lightrft.adapters.reward_service.batcher`), ``GET /health``, and ``peers``:
path -> another framework's wire format answered there, scored the same way
(:mod:`~lightrft.adapters.reward_service.peer_routes`). With a ``token`` every request must
carry ``Authorization: Bearer <token>`` (compared in constant time), else 401
(:mod:`~lightrft.adapters.service_access`); on a peer's path ``?token=<token>`` in the URL
does too, since those clients send no header. Bodies are counted while
they stream in: at ``max_request_bytes`` the request gets 413 and the rest is never read
(chunked bodies included; a declared ``Content-Length`` over the limit is refused before
reading); more than ``max_batch`` samples get 413 too; a malformed body gets 422 naming the
field. A request whose client disconnects before its batch is scored is dropped, not scored,
unless it carries a ``request_id``: a retried request is scored once
(:mod:`~lightrft.adapters.reward_service.request_memo`).
A source that raises ``ValueError`` for a request's samples gets that request 422 (only that
request: see the batcher), any other error 500 with its message. Images and audio in a request
are read and bounded by ``media`` (:mod:`~lightrft.adapters.reward_service.media`; without it
every request with media is refused) and only for a source whose ``reads_media`` is true.
Stalled clients are cut off: a connection gets ``header_timeout_s`` to send its headers and a
request ``body_timeout_s`` to send its body (408), and a client that disconnects mid-body is
one log line (:mod:`~lightrft.adapters.service_access`). A source with
``parallel_calls`` > 1 (``unit_tests``) is given that many batches at once.
``BackgroundServer`` runs an app on a thread (tests, in-process serving); ``serve`` runs it
in the foreground (both shared with the environment service, from
:mod:`~lightrft.adapters.service_access`). Both refuse a non-loopback host when the app has no
token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import FastAPI, HTTPException, Request, Response
from pydantic import ValidationError

from lightrft.adapters.reward_service.batcher import MicroBatcher
from lightrft.adapters.reward_service.media import MediaError, MediaLimits, RequestMedia
from lightrft.adapters.reward_service.peer_routes import Parsed, PeerFormat, peer_endpoint
from lightrft.adapters.reward_service.protocol import ScoreRequest, ScoreResponse
from lightrft.adapters.reward_service.request_memo import RequestMemo
from lightrft.adapters.service_access import (
    BODY_TIMEOUT_S,
    DEFAULT_HOST,
    HEADER_TIMEOUT_S,
    AccessGuard,
    BackgroundServer,
    serve,
)
from lightrft.domain.ports import RewardSource

log = structlog.get_logger(__name__)


def create_app(
    source: RewardSource,
    *,
    token: str | None = None,
    max_batch: int = 1024,
    max_request_bytes: int = 8 * 2**20,
    micro_batch_samples: int = 64,
    batch_window_s: float = 0.005,
    media: RequestMedia | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    body_timeout_s: float = BODY_TIMEOUT_S,
    peers: Mapping[str, PeerFormat] | None = None,
) -> FastAPI:
    """The FastAPI app serving ``source`` (see the module docstring)."""
    if not (header_timeout_s > 0 and body_timeout_s > 0):
        raise ValueError("header_timeout_s and body_timeout_s must be > 0")
    media = media or RequestMedia(MediaLimits(), decode=None)
    reads_media = bool(getattr(source, "reads_media", False))
    batcher = MicroBatcher(
        source.score,
        max_samples=micro_batch_samples,
        window_s=batch_window_s,
        max_concurrent=max(1, int(getattr(source, "parallel_calls", 1))),
    )
    memo: RequestMemo[Any] = RequestMemo()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        source.onload()
        batcher.start()
        log.info("reward_service.start", source=source.name)
        yield
        await batcher.stop()

    app = FastAPI(title="LightRFT reward service", lifespan=lifespan)
    app.state.batcher = batcher
    app.state.token_required = token is not None
    app.state.header_timeout_s = header_timeout_s  # read by the server's protocol
    app.add_middleware(
        AccessGuard,
        token=token,
        max_request_bytes=max_request_bytes,
        body_timeout_s=body_timeout_s,
        url_token_paths=frozenset(peers or ()),
    )

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "source": source.name}

    async def scored(
        request: Request, parse: Callable[[bytes], Parsed]
    ) -> tuple[list[float], dict[str, float]] | Response:
        """A request's scores and metrics (the body read under the limit, then ``parse``d),
        or the 499 of a client that left; errors as the module docstring says."""
        body = await _read_body(request, max_request_bytes)
        wire, request_id = parse(body)
        if len(wire) > max_batch:
            raise HTTPException(413, f"{len(wire)} samples exceed the limit of {max_batch}")
        try:  # file reads and decoding off the event loop (text requests stay on it)
            carries = any(s.images or s.audios for s in wire)
            payloads = (
                await asyncio.to_thread(media.payloads, wire, reads_media)
                if carries
                else [{} for _ in wire]
            )
        except MediaError as error:
            raise HTTPException(error.status, str(error)) from None
        samples = [s.to_sample(p) for s, p in zip(wire, payloads, strict=True)]
        started = time.perf_counter()
        key = memo.key(request_id, body)
        scoring = asyncio.ensure_future(memo.run(key, lambda: batcher.submit(samples)))
        gone = asyncio.ensure_future(_disconnect(request))
        await asyncio.wait({scoring, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not scoring.done():  # the client left: its samples are not scored
            scoring.cancel()
            log.info("reward_service.abandoned", samples=len(wire))
            return Response(status_code=499)
        gone.cancel()
        try:
            scores, metrics = scoring.result()
        except ValueError as error:  # the source rejected these samples
            raise HTTPException(422, f"reward source {source.name!r}: {error}") from None
        except Exception as error:  # noqa: BLE001 - reported to the client
            raise HTTPException(500, f"reward source {source.name!r} failed: {error}") from None
        log.debug(
            "reward_service.scored", samples=len(scores), seconds=time.perf_counter() - started
        )
        return scores, metrics

    @app.post("/score", response_model=None)
    async def score(request: Request) -> ScoreResponse | Response:
        outcome = await scored(request, _score_request)
        if isinstance(outcome, Response):
            return outcome
        return ScoreResponse(scores=outcome[0], metrics=outcome[1])

    for path, peer in (peers or {}).items():
        app.add_api_route(path, peer_endpoint(peer, scored), methods=["POST"], response_model=None)

    return app


def _score_request(body: bytes) -> Parsed:
    """``/score``'s samples and request id; 422 naming the field when malformed."""
    try:
        parsed = ScoreRequest.model_validate_json(body)
    except ValidationError as error:
        raise HTTPException(422, _first_error(error)) from None
    return parsed.samples, parsed.request_id


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, counted while it streams in: 413 as soon as it passes ``limit`` bytes."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"request body exceeds {limit} bytes")
    return bytes(body)


async def _disconnect(request: Request) -> None:
    """Returns when the client disconnects (the body has been read by then)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"invalid request at {where or 'body'}: {first.get('msg', 'invalid')}"


__all__ = ["BackgroundServer", "DEFAULT_HOST", "create_app", "serve"]
