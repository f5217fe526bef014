"""``DeepSpeedStrategy``: the ``Strategy`` port over DeepSpeed ZeRO 0-3 (+ ZeRO-Offload).

One ``deepspeed.initialize`` per module with a config from :func:`build_deepspeed_config`:
the caller owns gradient accumulation (any number of :meth:`backward` calls, then one
:meth:`step`), DeepSpeed never rescales the loss, and it averages gradients over the W
ranks, so a loss normalized by global counts must be multiplied by W before ``backward``
(the application does this), exactly as with FSDP. The learning rate of the shared schedule
(:mod:`lightrft.adapters.strategy_parts.lr_schedule`) is written into the client optimizer before
every step; a skipped step leaves weights, AdamW state and schedule untouched
(:mod:`.step_gate`). ``deepspeed`` is imported only when a strategy is prepared.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from lightrft.adapters.deepspeed import gather, offload, rank_state
from lightrft.adapters.deepspeed.config import build_deepspeed_config
from lightrft.adapters.deepspeed.engine_forward import route_forward_through_engine
from lightrft.adapters.deepspeed.optimizer import build_client_optimizer
from lightrft.adapters.deepspeed.step_gate import StepGate
from lightrft.adapters.strategy_parts.mixins import CountedSchedule
from lightrft.domain.types import OptimizerParams, StepResult

CHECKPOINT_TAG = "lightrft"
STEPS_KEY = "lightrft_steps"
LR_SCALE_KEY = "lightrft_lr_scale"


class DeepSpeedStrategy(CountedSchedule):
    """Trains one module with a DeepSpeed engine over the default process group.

    Args:
        optim: AdamW and schedule settings.
        device: this rank's device.
        zero_stage: 0 (data parallel), 1 (optimizer state sharded), 2 (+ gradients),
            3 (+ parameters).
        bf16: bf16 parameters/gradients with fp32 master weights (ZeRO >= 1).
        cpu_offload: ZeRO-Offload: fp32 master weights and AdamW state in host memory,
            stepped by DeepSpeedCPUAdam (ZeRO >= 1; its kernel compiles on first use).
        extra_config: merged into the generated DeepSpeed config (see
            :func:`build_deepspeed_config`).
    """

    def __init__(
        self,
        optim: OptimizerParams,
        *,
        device: torch.device,
        zero_stage: int = 2,
        bf16: bool = False,
        cpu_offload: bool = False,
        extra_config: Mapping[str, Any] | None = None,
    ) -> None:
        # validates the arguments now (world size 1 is a placeholder until prepare)
        build_deepspeed_config(
            optim,
            zero_stage=zero_stage,
            bf16=bf16,
            cpu_offload=cpu_offload,
            world_size=1,
            extra=extra_config,
        )
        self._optim = optim
        self._device = device
        self._zero_stage = zero_stage
        self._bf16 = bf16
        self._cpu_offload = cpu_offload
        self._extra = dict(extra_config or {})
        self._engine: Any = None
        self._client: torch.optim.Optimizer | None = None
        self._gate: StepGate | None = None
        self._steps = 0
        self._lr_scale = 1.0
        self._placement: offload.Placement | None = None

    @property
    def engine(self) -> Any:
        """The ``DeepSpeedEngine`` (after :meth:`prepare`)."""
        if self._engine is None:
            raise RuntimeError("call prepare(module) first")
        return self._engine

    @property
    def module(self) -> nn.Module:
        """The prepared module (calls of it run through the engine)."""
        module: nn.Module = self.engine.module
        return module

    @property
    def zero_stage(self) -> int:
        """The ZeRO stage."""
        return self._zero_stage

    @property
    def is_offloaded(self) -> bool:
        """Whether :meth:`offload` moved the state to the host (until :meth:`onload`)."""
        return self._placement is not None

    @property
    def config(self) -> dict[str, Any]:
        """The DeepSpeed config for the current world size."""
        world = dist.get_world_size() if dist.is_initialized() else 1
        return build_deepspeed_config(
            self._optim,
            zero_stage=self._zero_stage,
            bf16=self._bf16,
            cpu_offload=self._cpu_offload,
            world_size=world,
            pin_memory=self._device.type != "cpu",
            extra=self._extra,
        )

    def prepare(self, module: nn.Module) -> None:
        """Builds the engine over ``module`` (in place: ZeRO-3 partitions its parameters,
        bf16 casts them) and its AdamW. Every rank must call it with the same model."""
        if self._engine is not None:
            raise RuntimeError("DeepSpeedStrategy trains one module; prepare was already called")
        if not dist.is_initialized():
            raise RuntimeError(
                "DeepSpeedStrategy needs torch.distributed initialized (launch with torchrun "
                "and call init_process_group_from_env; one process: single_process_group=True)"
            )
        _ensure_local_rank()
        import deepspeed

        module.to(self._device)
        params = [p for p in module.parameters() if p.requires_grad]
        client = build_client_optimizer(params, self._optim, cpu_offload=self._cpu_offload)
        engine, *_ = deepspeed.initialize(model=module, optimizer=client, config=self.config)
        _check_unmanaged_accumulation(engine)
        stage0 = self._zero_stage == 0
        self._gate = StepGate(
            client,
            clip_params=params if stage0 else None,
            max_norm=self._optim.max_grad_norm if stage0 else None,
        )
        route_forward_through_engine(module, engine)
        self._engine, self._client = engine, client

    def backward(self, loss: Tensor) -> None:
        """Accumulates the (rank-averaged) gradients of the scalar ``loss``."""
        self._check_onloaded("backward")
        self.engine.backward(loss)

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        """Reduces, clips to ``max_grad_norm``, steps AdamW at the scheduled rate, zeroes
        the gradients. Collective: every rank calls it.

        ``grad_norm`` is the global norm before clipping. The update is skipped on every
        rank (gradients cleared, schedule not advanced) when any rank gives a
        ``skip_reason`` or the norm is not finite (DeepSpeed then reports it as ``inf``).
        """
        self._check_onloaded("step")
        engine, gate, client = self.engine, self._gate, self._client
        assert gate is not None and client is not None
        reason = self._agreed_request(skip_reason)
        lr = self.current_lr
        for group in client.param_groups:
            group["lr"] = lr
        gate.arm(open_=reason is None)
        engine.step()
        norm = gate.norm if self._zero_stage == 0 else engine.get_global_grad_norm()
        norm_value = float("nan") if norm is None else float(norm)
        applied = reason is None and gate.applied > 0 and engine.was_step_applied()
        if not applied:
            reason = reason or f"non-finite grad norm {norm_value}"
            return StepResult(norm_value, lr, skipped=True, reason=reason)
        self._steps += 1
        return StepResult(norm_value, lr)

    def _agreed_request(self, local_reason: str | None) -> str | None:
        """This rank's reason, or a note that another rank asked to skip."""
        flag = torch.tensor([0.0 if local_reason is None else 1.0], device=self._device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if local_reason is not None:
            return local_reason
        return "skip requested on another rank" if float(flag) > 0 else None

    def full_state(self) -> Iterator[tuple[str, Tensor]]:
        """(HF name, full tensor) of every parameter and persistent buffer, one at a time
        (ZeRO-3 gathers each parameter alone). Collective: every rank must exhaust it."""
        self._check_onloaded("full_state")
        return gather.full_state(self.module, device=self._device)

    def export_full_state_dict(self) -> dict[str, Tensor]:
        """The full model state in host memory on rank 0 (HF names), ``{}`` elsewhere.

        Collective. For ``save_pretrained(..., state_dict=...)`` on rank 0; dtype as
        trained (bf16 with ``bf16=True``).
        """
        self._check_onloaded("export_full_state_dict")
        return gather.export_state(self.module, device=self._device, is_main=dist.get_rank() == 0)

    def offload(self) -> None:
        """Moves parameters, gradient buffers and optimizer state to host memory (a second
        call before :meth:`onload` does nothing)."""
        if self._placement is not None:
            return
        assert self._client is not None
        self._placement = offload.offload_engine(
            self.engine,
            self._client,
            zero_stage=self._zero_stage,
            cpu_offload=self._cpu_offload,
            pin_memory=self._device.type != "cpu",
        )

    def onload(self) -> None:
        """Brings back what :meth:`offload` moved."""
        if self._placement is None:
            return
        assert self._client is not None
        offload.onload_engine(
            self.engine,
            self._client,
            self._placement,
            zero_stage=self._zero_stage,
            device=self._device,
        )
        self._placement = None

    def state_dict(self) -> dict[str, Any]:
        """This rank's state as host tensors (``torch.load(weights_only=True)``-safe):
        ``{"layout", "module", "optimizer" | "zero", "scheduler"}``. Per rank: restore it
        on the same rank with the same world size and ZeRO stage."""
        self._check_onloaded("state_dict")
        state = rank_state.capture(
            self.module, self.engine.optimizer, zero_stage=self._zero_stage, layout=self._layout()
        )
        state["scheduler"] = {"step": self._steps, "lr_scale": self._lr_scale}
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` output (after :meth:`prepare`)."""
        self._check_onloaded("load_state_dict")
        rank_state.restore(
            self.module,
            self.engine.optimizer,
            state,
            zero_stage=self._zero_stage,
            layout=self._layout(),
            world_size=dist.get_world_size(),
        )
        self._steps = int(state["scheduler"]["step"])
        self._lr_scale = float(state["scheduler"].get("lr_scale", 1.0))

    def save_checkpoint(self, directory: str | Path) -> None:
        """Writes a DeepSpeed checkpoint (every rank its partition) to ``directory``.

        Collective. Resume with :meth:`load_checkpoint`; ``zero_to_fp32.py`` in the
        directory consolidates it offline.
        """
        self._check_onloaded("save_checkpoint")
        self.engine.save_checkpoint(
            str(directory),
            tag=CHECKPOINT_TAG,
            client_state={STEPS_KEY: self._steps, LR_SCALE_KEY: self._lr_scale},
        )

    def load_checkpoint(self, directory: str | Path) -> None:
        """Reads what :meth:`save_checkpoint` wrote into the prepared engine (collective).

        DeepSpeed unpickles its own files: load only checkpoints you wrote.
        """
        self._check_onloaded("load_checkpoint")
        path, client_state = self.engine.load_checkpoint(
            str(directory), tag=CHECKPOINT_TAG, load_lr_scheduler_states=False
        )
        if path is None:
            raise FileNotFoundError(f"no DeepSpeed checkpoint {CHECKPOINT_TAG!r} in {directory}")
        self._steps = int(client_state[STEPS_KEY])
        self._lr_scale = float(client_state.get(LR_SCALE_KEY, 1.0))

    def _layout(self) -> dict[str, int]:
        return {
            "zero_stage": self._zero_stage,
            "world_size": dist.get_world_size(),
            "rank": dist.get_rank(),
        }

    def _check_onloaded(self, action: str) -> None:
        if self._placement is not None:
            raise RuntimeError(f"DeepSpeedStrategy.{action} while offloaded; call onload() first")


def _ensure_local_rank() -> None:
    """DeepSpeed insists on LOCAL_RANK; a one-process group (no launcher) is local rank 0."""
    if "LOCAL_RANK" in os.environ:
        return
    if dist.get_world_size() > 1:
        raise RuntimeError("DeepSpeed needs LOCAL_RANK in the environment (torchrun sets it)")
    os.environ["LOCAL_RANK"] = "0"


def _check_unmanaged_accumulation(engine: Any) -> None:
    """Refuses a DeepSpeed that ignores ``managed_gradient_accumulation: false`` (older
    releases would silently reduce and step on every backward)."""
    managed = getattr(engine, "managed_gradient_accumulation", None)
    if managed is None or managed():
        import deepspeed

        raise RuntimeError(
            f"DeepSpeed {deepspeed.__version__} does not support "
            "managed_gradient_accumulation=false; install deepspeed>=0.19.8"
        )
