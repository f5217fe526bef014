"""The names and defaults of the rollout-correction modes (torch-free; the corrections are in
:mod:`lightrft.domain.rollout_correction`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from lightrft.domain.scalar_checks import check_positive

CorrectionMode = Literal["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"]


CORRECTION_MODES: tuple[str, ...] = get_args(CorrectionMode)


DEFAULT_CORRECTION_MODE: CorrectionMode = "token_truncate"


DEFAULT_CORRECTION_CAP = 2.0


@dataclass(frozen=True)
class RolloutCorrection:
    """A correction ``mode`` with its cap C > 0 (see the module docstring)."""

    mode: CorrectionMode = DEFAULT_CORRECTION_MODE
    cap: float = DEFAULT_CORRECTION_CAP

    def __post_init__(self) -> None:
        if self.mode not in CORRECTION_MODES:
            raise ValueError(
                f"unknown rollout correction mode {self.mode!r}; valid: {', '.join(CORRECTION_MODES)}"
            )
        check_positive("cap", self.cap)
