"""The model's media placeholder tokens in a rendered prompt: one per image or audio clip.

A multimodal model expands each placeholder (Qwen2-VL's ``<|image_pad|>``, Qwen2-Audio's
``<|AUDIO|>``) into the positions of one media item, so a prompt whose placeholders do not
match its media cannot be encoded: a raw placeholder typed into the text, a row whose
``<image>`` markers the data layer rendered but whose truncation cut one off. Checking the
rendered token ids when the dataset is built makes such a row a bad row (named, or skipped
and counted) instead of an error at the training step that first draws it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError

MEDIA_NOUNS = {"images": "image", "audios": "audio clip", "videos": "video"}
MARKS = {"images": "<image> / <audio>", "audios": "<image> / <audio>", "videos": "<video>"}


@dataclass(frozen=True)
class MediaPlaceholders:
    """The placeholder token (its text) of one image, one audio clip and one video (None:
    the model takes no such media, and its rows are not checked for it)."""

    image: str | None = None
    audio: str | None = None
    video: str | None = None

    def by_media(self) -> dict[str, str]:
        """``{"images": token, "audios": token, "videos": token}`` for the kinds set."""
        tokens = {"images": self.image, "audios": self.audio, "videos": self.video}
        return {kind: token for kind, token in tokens.items() if token is not None}


class PlaceholderCheck:
    """Counts each placeholder in a row's prompt ids against the row's media items.

    Args:
        placeholders: the model's tokens.
        tokenizer: resolves them to ids (``ValueError`` for a token it does not know).
        keys: the row keys of each media kind (``{"images": "images"}`` ...), for messages.
    """

    def __init__(
        self, placeholders: MediaPlaceholders, tokenizer: Any, keys: Mapping[str, str | None]
    ) -> None:
        self._tokens: dict[str, tuple[str, int]] = {}
        unknown = getattr(tokenizer, "unk_token_id", None)
        for kind, token in placeholders.by_media().items():
            token_id = tokenizer.convert_tokens_to_ids(token)
            if not isinstance(token_id, int) or token_id == unknown:
                raise ValueError(f"the tokenizer has no {MEDIA_NOUNS[kind]} token {token!r}")
            self._tokens[kind] = (token, token_id)
        self._keys = keys

    def check(
        self, token_ids: Sequence[int], items: Mapping[str, int], where: str, key: str
    ) -> None:
        """Raises :class:`BadRowError` (naming ``where``, the media key and ``key``, the
        prompt's) when a placeholder count differs from the row's number of items."""
        for kind, (token, token_id) in self._tokens.items():
            found, want = list(token_ids).count(token_id), items.get(kind, 0)
            if found != want:
                noun = MEDIA_NOUNS[kind]
                media_key = self._keys.get(kind)
                source = f"key {media_key!r}" if media_key else "no media key"
                raise BadRowError(
                    where,
                    key,
                    f"the prompt holds {found} {noun} placeholder token(s) {token!r} but the row "
                    f"has {want} {noun}(s) ({source}); expected one per {noun}, placed by the "
                    f"data layer (mark positions with {MARKS[kind]}, not the model's token); in",
                )
