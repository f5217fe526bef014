"""Images and audio in reward-service requests: where they may come from and how big.

A wire sample may carry ``images`` / ``audios``, each a list of ``{"path": ...}`` (a file on
the server's machine) or ``{"base64": ...}`` (the file's bytes) items. The prompt text holds
one model placeholder per item (rendered with the model's chat template, as the policy's
prompts are). :class:`RequestMedia` turns them into decoded items, refusing with a
:class:`MediaError` (an HTTP status and a message naming the field and the limit):

- more than ``max_items`` items in one request: 413;
- an item over ``max_item_bytes`` (a file's size checked before it is read; base64 checked
  on its length before it is decoded): 413;
- a path while no ``root`` is configured, or one that resolves outside ``root`` (``..``
  and symbolic links included): 403; a missing file under it: 422;
- invalid base64, or bytes the decoder cannot read (not an image, not a 16-bit PCM .wav): 422;
- media sent to a source that does not read them: 422.

Decoding is the caller's (``decode(kind, data, where)``, kind ``"images"`` or ``"audios"``),
so this package stays independent of the image and audio readers.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

MEDIA_KINDS = ("images", "audios")
Decoder = Callable[[str, bytes, str], Any]  # (kind, data, where) -> decoded item


class WireMedia(BaseModel):
    """One image or audio clip: exactly one of a server-side ``path`` or ``base64`` bytes."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    base64: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> WireMedia:
        if (self.path is None) == (self.base64 is None):
            raise ValueError("give exactly one of 'path' or 'base64'")
        return self


class MediaError(Exception):
    """A request's media refused: ``status`` (4xx) and a message naming the field."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class MediaLimits:
    """Where paths may point (``root``; None: paths refused) and how much may come."""

    root: Path | None = None
    max_item_bytes: int = 16 * 2**20
    max_items: int = 32

    def __post_init__(self) -> None:
        if self.max_item_bytes < 1 or self.max_items < 1:
            raise ValueError("max_item_bytes and max_items must be >= 1")


class RequestMedia:
    """Decodes the media of a request's samples under :class:`MediaLimits`."""

    def __init__(self, limits: MediaLimits, decode: Decoder | None) -> None:
        self._limits, self._decode = limits, decode
        self._root = limits.root.resolve() if limits.root is not None else None

    def payloads(
        self, samples: Sequence[Any], source_reads_media: bool
    ) -> list[dict[str, list[Any]]]:
        """One ``{"images": [...], "audios": [...]}`` (kinds present only) per sample."""
        total = sum(len(getattr(s, kind) or ()) for s in samples for kind in MEDIA_KINDS)
        if total and (self._decode is None or not source_reads_media):
            field = next(
                f"samples.{i}.{kind}"
                for i, s in enumerate(samples)
                for kind in MEDIA_KINDS
                if getattr(s, kind)
            )
            raise MediaError(422, f"{field}: this reward source does not read images or audio")
        if total > self._limits.max_items:
            raise MediaError(
                413,
                f"samples: {total} media items exceed the limit of {self._limits.max_items} "
                "per request (max_media_items)",
            )
        out = []
        for i, sample in enumerate(samples):
            payload: dict[str, list[Any]] = {}
            for kind in MEDIA_KINDS:
                items = getattr(sample, kind) or ()
                decoded = [
                    self._item(kind, item, f"samples.{i}.{kind}.{j}")
                    for j, item in enumerate(items)
                ]
                if decoded:
                    payload[kind] = decoded
            out.append(payload)
        return out

    def _item(self, kind: str, item: WireMedia, field: str) -> Any:
        data = self._read(item, field)
        assert self._decode is not None
        try:
            return self._decode(kind, data, field)
        except ValueError as error:
            message = str(error)
            raise MediaError(422, message if field in message else f"{field}: {message}") from None

    def _read(self, item: WireMedia, field: str) -> bytes:
        limit = self._limits.max_item_bytes
        if item.base64 is not None:
            text = item.base64.partition(",")[2] if item.base64.startswith("data:") else item.base64
            if len(text) * 3 // 4 > limit:
                raise MediaError(413, f"{field}.base64: over {limit} bytes (max_media_bytes)")
            try:
                return base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raise MediaError(422, f"{field}.base64: invalid base64") from None
        assert item.path is not None
        path = self._allowed_path(item.path, f"{field}.path")
        size = path.stat().st_size
        if size > limit:
            raise MediaError(413, f"{field}.path: {size} bytes, over {limit} (max_media_bytes)")
        return path.read_bytes()

    def _allowed_path(self, text: str, field: str) -> Path:
        if self._root is None:
            raise MediaError(
                403, f"{field}: local paths are not served (start the service with --media-root)"
            )
        path = (self._root / text).resolve()  # an absolute text stays absolute
        if not path.is_relative_to(self._root):
            raise MediaError(403, f"{field}: {text!r} is outside the media root")
        if not path.is_file():
            raise MediaError(422, f"{field}: no file {text!r} under the media root")
        return path
