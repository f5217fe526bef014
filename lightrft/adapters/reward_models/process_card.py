"""``lightrft_process_reward.json`` (and a README model card): what a process reward model
needs besides its weights: the step separator, the two label tokens read at each step's end,
how (prompt, steps) were tokenized, and the backbone's modality.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lightrft.adapters.reward_models.encoding import PairEncoding

PROCESS_CARD_FILE = "lightrft_process_reward.json"
PROCESS_CARD_VERSION = 1


@dataclass(frozen=True)
class ProcessRewardCard:
    """The separator closing every step, the ``+`` / ``-`` label tokens, the encoding."""

    separator: str = "\n\n"
    positive_token: str = "+"
    negative_token: str = "-"
    encoding: PairEncoding = field(default_factory=PairEncoding)
    modality: str = "text"

    def __post_init__(self) -> None:
        if not self.separator:
            raise ValueError("a process reward model needs a non-empty step separator")
        if self.positive_token == self.negative_token:
            raise ValueError(f"the two label tokens must differ, both are {self.positive_token!r}")

    def save(self, directory: str | Path) -> Path:
        """Writes the card (json) and a README.md model card into ``directory``."""
        path = Path(directory) / PROCESS_CARD_FILE
        payload = {"version": PROCESS_CARD_VERSION, **asdict(self)}
        path.write_text(json.dumps(payload, indent=2) + "\n")
        (Path(directory) / "README.md").write_text(self.readme())
        return path

    def readme(self) -> str:
        """A model card naming the separator and label tokens."""
        return (
            "---\nlibrary_name: transformers\ntags: [process-reward-model, lightrft]\n---\n\n"
            "# Process reward model (LightRFT)\n\n"
            "Trained with `lightrft rm train --kind process`. A response is cut into steps "
            f"after each step separator {self.separator!r}; each step's score is "
            f"p({self.positive_token!r}) = softmax over the label tokens "
            f"[{self.positive_token!r}, {self.negative_token!r}] of the logits at the step's "
            "last token (the separator's last token).\n\n"
            f"- separator: `{json.dumps(self.separator)}`\n"
            f"- positive label token: `{json.dumps(self.positive_token)}`\n"
            f"- negative label token: `{json.dumps(self.negative_token)}`\n"
            f"- modality: {self.modality}\n"
            f"- prompt special tokens: {self.encoding.prompt_special_tokens}, "
            f"max length: {self.encoding.max_length}\n\n"
            "Load it as a `process_rm` reward source "
            '(docs/reward-models.md, "Process reward models").\n'
        )

    @classmethod
    def load(cls, directory: str | Path) -> ProcessRewardCard | None:
        """The card in ``directory``, or ``None`` if it has none."""
        path = Path(directory) / PROCESS_CARD_FILE
        if not path.is_file():
            return None
        try:
            payload: dict[str, Any] = json.loads(path.read_text())
            if payload.get("version") != PROCESS_CARD_VERSION:
                raise ValueError(
                    f"version {payload.get('version')!r}, expected {PROCESS_CARD_VERSION}"
                )
            return cls(
                separator=str(payload["separator"]),
                positive_token=str(payload["positive_token"]),
                negative_token=str(payload["negative_token"]),
                encoding=PairEncoding(**payload["encoding"]),
                modality=str(payload.get("modality", "text")),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"invalid process reward model card {path}: {error}") from None
