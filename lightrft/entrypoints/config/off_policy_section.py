"""The ``rollout`` keys of off-policy (overlapped) rollouts: ``rollout.mode``,
``rollout.max_staleness``, ``rollout.placement`` and their deadlines (docs/async.md).

A base of :class:`~lightrft.entrypoints.config.sections.RolloutConfig`, kept in its own
module so the rollout section stays one concern per file.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.entrypoints.config.base import Section
from lightrft.entrypoints.field_copy import params_from

DEFAULT_STALENESS = {"sync": 0, "one_step_off": 1, "async": 2}


class OffPolicyFields(Section):
    mode: Literal["sync", "one_step_off", "async"] = Field(
        "sync",
        description="sync: each batch is generated with the policy that trains on it; "
        "one_step_off: the batch of step k+1 with the policy of step k; async: up to "
        "max_staleness policy versions old.",
    )
    max_staleness: int | None = Field(
        None,
        ge=0,
        description="Policy versions a sample may lag behind the trained policy (0 is the "
        "synchronous cycle); None: 0 for sync, 1 for one_step_off, 2 for async. Outside sync "
        "the stale samples are importance-corrected (algorithm.tis_cap=2 unless set).",
    )
    placement: Literal["colocated", "split"] = Field(
        "colocated",
        description="colocated: the trainer generates between its steps (time-sliced); "
        "split: the engine runs in its own process (engine_threads torch threads) and a "
        "producer thread fills the queue while the trainer trains (one rank).",
    )
    engine_threads: int | None = Field(
        None,
        gt=0,
        description="Torch threads of the split engine's process; None: as many as the trainer.",
    )
    engine_devices: list[Annotated[int, Field(ge=0)]] | None = Field(
        None,
        description="Split placement: accelerator device indices (as the trainer sees them) "
        "the engine's process gets; it sees only these (CUDA_VISIBLE_DEVICES / "
        "ASCEND_RT_VISIBLE_DEVICES) and an HF engine runs on the first, vLLM and SGLang see "
        "all of them. None: the trainer's device.",
    )
    queue_timeout_s: float = Field(
        1800.0, gt=0, description="Deadline of a wait for a batch (or for room in the queue)."
    )
    weight_sync_timeout_s: float = Field(
        600.0, gt=0, description="Deadline of one weight transfer to a split engine."
    )
    verify_weight_sync: bool = Field(
        True,
        description="After every sync, compare a checksum of the engine's weights with the "
        "trainer's (LoRA merged); a mismatch stops the run. Engines that cannot digest "
        "their weights (vLLM, SGLang) are logged as unverified.",
    )

    shutdown_timeout_s: float = Field(
        60.0,
        gt=0,
        description="Deadline of stopping the split producer thread at the end of a run "
        "(then its engine process is killed; a thread still stuck is a named error).",
    )
    partial_rollouts: bool = Field(
        False,
        description="Partial rollouts (placement split, mode one_step_off or async): the "
        "producer generates in chunks of partial_chunk_tokens new tokens and, between "
        "chunks, loads weights the trainer published meanwhile; unfinished samples continue "
        "with them and every token is tagged with the version that sampled it.",
    )
    partial_chunk_tokens: int = Field(
        64, gt=0, description="New tokens per sample between two weight checks (partial_rollouts)."
    )

    @model_validator(mode="after")
    def _staleness_fits_mode(self) -> OffPolicyFields:
        self.off_policy()  # raises on a mode/staleness mismatch
        return self

    @model_validator(mode="after")
    def _engine_devices_fit_placement(self) -> OffPolicyFields:
        devices = self.engine_devices
        if devices is None:
            return self
        if self.placement != "split":
            raise ValueError(
                f"rollout.engine_devices={devices} needs rollout.placement=split (only a split "
                f"engine runs in a process of its own), got placement={self.placement!r}"
            )
        if not devices:
            raise ValueError("rollout.engine_devices is empty: name at least one device")
        repeated = sorted({d for d in devices if devices.count(d) > 1})
        if repeated:
            raise ValueError(f"rollout.engine_devices={devices} names device(s) {repeated} twice")
        return self

    @property
    def staleness(self) -> int:
        """``max_staleness`` or the mode's default."""
        return DEFAULT_STALENESS[self.mode] if self.max_staleness is None else self.max_staleness

    def corrects_staleness(self) -> bool:
        """Whether stale samples are trained on (then a correction is on by default)."""
        return self.staleness > 0

    def off_policy(self) -> OffPolicyParams:
        """The service parameters of these keys."""
        return params_from(OffPolicyParams, self, resolved={"max_staleness": self.staleness})
