"""What a checkpoint store may say about a checkpoint that cannot be used.

A store that can check its checkpoints (sizes and checksums recorded when it wrote them)
offers ``verify(step) -> list[str]`` (the problems found; empty when intact), and its
``load`` raises :class:`DamagedCheckpointError` for a checkpoint that cannot be read. The
resume logic (:mod:`lightrft.application.checkpoint_resume`) then falls back to the newest
intact checkpoint, or raises :class:`NoIntactCheckpointError` when there is none.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class DamagedCheckpointError(RuntimeError):
    """A checkpoint whose files are missing, truncated or changed; the message names them."""


class NoIntactCheckpointError(RuntimeError):
    """Every checkpoint of the run is damaged: nothing to resume from."""


@runtime_checkable
class VerifiableStore(Protocol):
    """The optional part of a ``CheckpointStore`` the resume logic uses when present."""

    def steps(self) -> list[int]:
        """Steps of all complete checkpoints, ascending."""
        ...

    def verify(self, step: int) -> list[str]:
        """Problems of the checkpoint of ``step`` (file, expected, found); empty if intact."""
        ...
