"""``lightrft_reward.json``: what a trained reward model needs besides its weights.

Written next to the HF files by the export, read by the loader: how (prompt, response) pairs
were tokenized during training (:class:`~lightrft.adapters.reward_models.encoding.
PairEncoding`) and, optionally, the mean and standard deviation of the model's raw scores
(measured after training) that score normalization divides by, and the backbone's modality
(``text``, ``vision-language``, ``audio-language``: how the directory is loaded). A directory without the file
is a plain HF model (a fresh head when it is a causal LM): defaults apply.

A model with scoring beyond the plain classifier's (a probing layer, mean or attention
pooling, named heads, logit scales: :class:`~lightrft.adapters.reward_models.score_heads.
HeadSpec`) records it under ``heads``; the weights of those parts are in
:data:`SCORING_FILE` beside the card. A card without ``heads`` is the plain one.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lightrft.adapters.reward_models.encoding import PairEncoding
from lightrft.adapters.reward_models.score_heads import HeadSpec

CARD_FILE = "lightrft_reward.json"
SCORING_FILE = "lightrft_scoring.safetensors"
CARD_VERSION = 1


@dataclass(frozen=True)
class ScoreNormalization:
    """Raw scores s become (s - mean) / std."""

    mean: float
    std: float

    def __post_init__(self) -> None:
        if not math.isfinite(self.mean):
            raise ValueError(f"normalization mean must be finite, got {self.mean}")
        if not (math.isfinite(self.std) and self.std > 0):
            raise ValueError(f"normalization std must be positive and finite, got {self.std}")


@dataclass(frozen=True)
class RewardModelCard:
    """Encoding and normalization of one reward model."""

    encoding: PairEncoding = field(default_factory=PairEncoding)
    normalization: ScoreNormalization | None = None
    modality: str = "text"
    heads: HeadSpec = field(default_factory=HeadSpec)
    directory: str | None = field(default=None, compare=False)  # where it was loaded from

    @property
    def scoring_file(self) -> Path | None:
        """The scoring weights of the directory this card was loaded from (None: plain
        scoring, or a card not read from a directory)."""
        if self.heads.plain or self.directory is None:
            return None
        return Path(self.directory) / SCORING_FILE

    def save(self, directory: str | Path) -> Path:
        """Writes ``lightrft_reward.json`` into ``directory``; returns the file."""
        path = Path(directory) / CARD_FILE
        payload = {
            "version": CARD_VERSION,
            "encoding": asdict(self.encoding),
            "normalization": asdict(self.normalization) if self.normalization else None,
            "modality": self.modality,
            "heads": self.heads.to_json(),
        }
        path.write_text(json.dumps(payload, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> RewardModelCard | None:
        """The card in ``directory``, or ``None`` if it has none."""
        path = Path(directory) / CARD_FILE
        if not path.is_file():
            return None
        try:
            payload: dict[str, Any] = json.loads(path.read_text())
            if payload.get("version") != CARD_VERSION:
                raise ValueError(f"version {payload.get('version')!r}, expected {CARD_VERSION}")
            norm = payload.get("normalization")
            return cls(
                encoding=PairEncoding(**payload["encoding"]),
                normalization=ScoreNormalization(**norm) if norm else None,
                modality=str(payload.get("modality", "text")),
                heads=HeadSpec.from_json(payload["heads"]) if payload.get("heads") else HeadSpec(),
                directory=str(directory),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"invalid reward model card {path}: {error}") from None
