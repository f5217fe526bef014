"""Parameters of off-policy (overlapped) rollouts: mode, staleness bound, placement, deadlines.

``mode``: ``sync`` (generate each step's batch with the policy that trains on it),
``one_step_off`` (``max_staleness`` 1: the batch of step k+1 is generated with the policy
of step k) or ``async`` (up to ``max_staleness`` versions; 0 is the synchronous cycle through the
asynchronous machinery). ``placement``: ``colocated``
(the trainer generates between its steps: time-sliced, no overlap) or ``split`` (the engine
runs elsewhere, another process or other devices, and a producer thread feeds a queue while
the trainer trains). ``partial_rollouts`` (split, outside ``sync``): the producer generates
in chunks of ``partial_chunk_tokens`` new tokens and loads weights the trainer published
meanwhile between chunks, tokens tagged by version. See docs/async.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

RolloutMode = Literal["sync", "one_step_off", "async"]
ROLLOUT_MODES: tuple[str, ...] = get_args(RolloutMode)
Placement = Literal["colocated", "split"]
PLACEMENTS: tuple[str, ...] = get_args(Placement)


@dataclass(frozen=True)
class OffPolicyParams:
    """See the module docstring. Deadlines are in seconds."""

    mode: RolloutMode = "sync"
    max_staleness: int = 0
    placement: Placement = "colocated"
    queue_timeout_s: float = 1800.0  # a trainer waiting for a batch / a producer for room
    weight_sync_timeout_s: float = 600.0  # one weight transfer to a split engine
    verify_weight_sync: bool = True  # checksum engine weights after every sync
    shutdown_timeout_s: float = 60.0  # joining the producer thread when the feed closes
    partial_rollouts: bool = False  # resume unfinished samples with newer weights
    partial_chunk_tokens: int = 64  # new tokens per row between two weight checks

    def __post_init__(self) -> None:
        if self.mode not in ROLLOUT_MODES:
            raise ValueError(f"mode must be one of {', '.join(ROLLOUT_MODES)}, got {self.mode!r}")
        if self.placement not in PLACEMENTS:
            raise ValueError(
                f"placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}"
            )
        if self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0, got {self.max_staleness}")
        expected = {"sync": 0, "one_step_off": 1}.get(self.mode)
        if expected is not None and self.max_staleness != expected:
            raise ValueError(
                f"mode {self.mode!r} needs max_staleness {expected}, got {self.max_staleness}"
            )
        if self.partial_rollouts and (self.placement != "split" or self.mode == "sync"):
            raise ValueError(
                "rollout.partial_rollouts needs rollout.placement=split and rollout.mode "
                "one_step_off or async (weights change during a generation only there), got "
                f"placement={self.placement!r}, mode={self.mode!r}"
            )
        if self.partial_chunk_tokens < 1:
            raise ValueError(f"partial_chunk_tokens must be >= 1, got {self.partial_chunk_tokens}")
        for name in ("queue_timeout_s", "weight_sync_timeout_s", "shutdown_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
