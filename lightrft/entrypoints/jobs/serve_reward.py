"""`lightrft serve-reward`: one configured reward source behind the HTTP reward service.

Authenticated by default: without a token (``$LIGHTRFT_REWARD_TOKEN``, or the variable
``--token-env`` names) the service refuses to start, unless ``--no-auth`` is given and the
host is a loopback address; a non-loopback host without a token is always refused. Both are
one-line configuration errors (exit status 2), raised before the source is built.

Besides ``/score`` the service answers other frameworks' reward clients on their own paths
(``SERVED_PATHS`` of :mod:`lightrft.adapters.reward_protocols`): OpenRLHF's on
``/get_reward`` (where its ``serve_rm`` listens) and ``/openrlhf/get_reward``, the original
LightRFT's on ``/original/get_reward``; those clients send no header, so there the token may
come as ``?token=`` in the URL.

Requests may carry images and audio for a source that reads them (a vision- or
audio-language ``scalar_rm``): base64 always, local paths only under ``media_root``; each item
at most ``max_media_bytes``, at most ``max_media_items`` per request
(:mod:`lightrft.adapters.reward_service.media`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from lightrft.domain.ports import RewardSource
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.roots.serve_reward import served_source

log = structlog.get_logger(__name__)

TOKEN_ENV = "LIGHTRFT_REWARD_TOKEN"
MIN_PUBLIC_TOKEN_CHARS = 16
"""Shorter tokens on a non-loopback host get a warning (``reward_service.weak_token``)."""


@dataclass(frozen=True)
class ServeOptions:
    """Which source, where, and the service's limits."""

    source: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    token_env: str = TOKEN_ENV
    max_batch: int = 1024
    max_request_bytes: int = 8 * 2**20
    micro_batch_samples: int = 64
    batch_window_ms: float = 5.0
    no_auth: bool = False
    media_root: str | None = None  # local media paths are served from under it only
    max_media_bytes: int = 16 * 2**20  # per image / audio item
    max_media_items: int = 32  # per request
    header_timeout_s: float = 10.0  # a connection's request headers, else it is closed
    body_timeout_s: float = 30.0  # a request's body after its headers, else 408


def build_served_source(config: RunConfig, name: str | None) -> RewardSource:
    """The reward source ``name`` of ``reward.sources`` (the only one when ``name`` is None)."""
    sections = config.reward.typed_sources
    labels = [s.label for s in sections]
    if name is None:
        if len(sections) != 1:
            raise ValueError(f"reward.sources has {labels}; choose one with --source")
        section = sections[0]
    elif name in labels:
        section = sections[labels.index(name)]
    else:
        raise ValueError(f"no reward source named {name!r}; reward.sources has {labels}")
    return served_source(config, section)


def service_token(options: ServeOptions) -> str | None:
    """The bearer token, or ``None`` where serving without one is allowed (``--no-auth`` on a
    loopback host); raises ``ConfigError`` otherwise (see the module docstring)."""
    from lightrft.adapters.service_access import is_loopback

    token = os.environ.get(options.token_env) or None
    if token is not None:
        if len(token) < MIN_PUBLIC_TOKEN_CHARS and not is_loopback(options.host):
            log.warning(
                "reward_service.weak_token",
                host=options.host,
                detail=f"a token of {len(token)} characters on an address other machines can "
                f"reach is guessable; use at least {MIN_PUBLIC_TOKEN_CHARS} (python -c 'import "
                "secrets; print(secrets.token_hex(16))')",
            )
        return token
    if not is_loopback(options.host):
        raise ConfigError(
            f"serve-reward: refusing to serve on {options.host} without a token (other "
            f"machines can reach it): set ${options.token_env}, or bind 127.0.0.1"
        )
    if not options.no_auth:
        raise ConfigError(
            f"serve-reward: no token: set ${options.token_env} (clients send it, e.g. the "
            "remote source's token_env), or pass --no-auth to serve this loopback address "
            "to every local process"
        )
    log.warning("reward_service.no_auth", host=options.host, detail="any local process can call it")
    return None


def build_app(config: RunConfig, options: ServeOptions) -> Any:
    """The FastAPI app of ``options.source`` (token: :func:`service_token`, checked first)."""
    from lightrft.adapters.reward_protocols import SERVED_PATHS
    from lightrft.adapters.reward_service import create_app
    from lightrft.adapters.reward_service.media import MediaLimits, RequestMedia

    token = service_token(options)
    source = build_served_source(config, options.source)
    limits = MediaLimits(
        Path(options.media_root) if options.media_root else None,
        options.max_media_bytes,
        options.max_media_items,
    )
    return create_app(
        source,
        token=token,
        max_batch=options.max_batch,
        max_request_bytes=options.max_request_bytes,
        micro_batch_samples=options.micro_batch_samples,
        batch_window_s=options.batch_window_ms / 1000.0,
        media=RequestMedia(limits, decode_media),
        header_timeout_s=options.header_timeout_s,
        body_timeout_s=options.body_timeout_s,
        peers=SERVED_PATHS,
    )


def decode_media(kind: str, data: bytes, where: str) -> Any:
    """A served image (RGB) or audio clip ``(waveform, rate)`` from its file's bytes."""
    from lightrft.adapters.datasets.multimodal_rows import load_audio, load_image

    if kind == "images":
        return load_image(data, where=where, key=kind)
    return load_audio(data, where=where, key=kind)
