"""``Fsdp2Strategy``: the ``Strategy`` port over PyTorch FSDP2 (``fully_shard``).

Parameters, gradients and AdamW state are sharded over the data-parallel ranks (each
rank holds 1/W of every tensor). Gradients are averaged over ranks by FSDP's
reduce-scatter, so a loss normalized by global counts must be multiplied by W before
``backward`` (the application does this). ``step`` clips by the global gradient norm,
sets the learning rate of the shared schedule (:mod:`lightrft.adapters.strategy_parts.lr_schedule`)
and skips the update, on every rank alike, when the norm is not finite or any rank gives a
``skip_reason``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor

from lightrft.adapters.fsdp.gather import clean_name, full_state
from lightrft.adapters.fsdp.optimizer import clip_to_norm, total_grad_norm
from lightrft.adapters.fsdp.sharding import MixedPrecision, layer_class_names, shard_model
from lightrft.adapters.strategy_parts.adamw import build_adamw
from lightrft.adapters.strategy_parts.mixins import CountedSchedule, PreparedModule
from lightrft.domain.checkpoint_fit import check_weights_fit
from lightrft.domain.types import OptimizerParams, StepResult

HOST = torch.device("cpu")
DEFAULT_SYNC_BUCKET_BYTES = 256 * 2**20


class Fsdp2Strategy(PreparedModule, CountedSchedule):
    """Trains one module sharded with FSDP2 over the default process group.

    Args:
        optim: AdamW and schedule settings.
        device: this rank's device (where unsharded blocks are computed).
        mixed_precision: ``"bf16"`` computes and all-gathers in bf16 and reduces gradients
            in fp32; parameters and optimizer state stay fp32 either way.
        cpu_offload: keep the parameter shards, gradients and optimizer state in host
            memory (FSDP2's ``CPUOffloadPolicy``; the optimizer steps on the CPU).
        reshard_after_forward: free each block's gathered parameters after its forward
            (and gather again in backward) instead of keeping them until backward.
        sync_bucket_bytes: full-size bytes gathered per collective by :meth:`full_state`.
        layer_classes: class names of the blocks sharded one by one; ``None`` reads the
            model's ``_no_split_modules``; ``[]`` shards the root only.
        mesh: a 1-D data-parallel device mesh (default: every rank of the default group).
        sequence_parallel_size: S ranks share each sample, each computing the gradient of its
            part of the sequence (Ulysses, ``adapters/hf/sequence_parallel.py``); FSDP
            averages over all ranks, so :meth:`backward` multiplies the loss by S to keep
            the average over the data-parallel ranks only.
    """

    def __init__(
        self,
        optim: OptimizerParams,
        *,
        device: torch.device,
        mixed_precision: MixedPrecision = "fp32",
        cpu_offload: bool = False,
        reshard_after_forward: bool = True,
        sync_bucket_bytes: int = DEFAULT_SYNC_BUCKET_BYTES,
        layer_classes: Sequence[str] | None = None,
        mesh: DeviceMesh | None = None,
        sequence_parallel_size: int = 1,
    ) -> None:
        if sequence_parallel_size < 1:
            raise ValueError(f"sequence_parallel_size must be >= 1, got {sequence_parallel_size}")
        if sync_bucket_bytes < 1:
            raise ValueError(f"sync_bucket_bytes must be >= 1, got {sync_bucket_bytes}")
        if mixed_precision not in ("fp32", "bf16"):
            raise ValueError(f"mixed_precision must be 'fp32' or 'bf16', got {mixed_precision!r}")
        self._optim = optim
        self._device = device
        self._mixed_precision: MixedPrecision = mixed_precision
        self._cpu_offload = cpu_offload
        self._reshard = reshard_after_forward
        self._bucket_bytes = sync_bucket_bytes
        self._layer_classes = None if layer_classes is None else tuple(layer_classes)
        self._mesh = mesh
        self._sequence_parallel = sequence_parallel_size
        self._module: nn.Module | None = None
        self._optimizer: torch.optim.Optimizer | None = None
        self._params: list[nn.Parameter] = []
        self._steps = 0
        self._lr_scale = 1.0
        self._state_devices: dict[tuple[int, str], torch.device] = {}
        self._offloaded = False

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """AdamW over the sharded parameters."""
        if self._optimizer is None:
            raise RuntimeError("call prepare(module) first")
        return self._optimizer

    @property
    def is_offloaded(self) -> bool:
        """Whether :meth:`offload` moved the state to the host (until :meth:`onload`)."""
        return self._offloaded

    def prepare(self, module: nn.Module) -> None:
        """Shards ``module`` in place (blocks, then the root), then builds AdamW over the
        sharded parameters. Every rank must call it with the same model."""
        if self._module is not None:
            raise RuntimeError("Fsdp2Strategy trains one module; prepare was already called")
        if not dist.is_initialized():
            raise RuntimeError(
                "Fsdp2Strategy needs torch.distributed initialized (launch with torchrun and "
                "call init_process_group_from_env); on one device use SingleDeviceStrategy"
            )
        if self._mesh is None:
            self._mesh = init_device_mesh(self._device.type, (dist.get_world_size(),))
        mesh = self._mesh
        shard_model(
            module,
            mesh,
            layer_classes=layer_class_names(module, self._layer_classes),
            mixed_precision=self._mixed_precision,
            cpu_offload=self._cpu_offload,
            reshard_after_forward=self._reshard,
        )
        self._module = module
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._optimizer = build_adamw(self._params, self._optim)

    def backward(self, loss: Tensor) -> None:
        """Accumulates the (rank-averaged, sharded) gradients of the scalar ``loss``."""
        self._check_onloaded("backward")
        if self._sequence_parallel > 1:
            loss = loss * self._sequence_parallel
        torch.autograd.backward(loss)

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        """Clips to ``max_grad_norm``, steps AdamW at the scheduled rate, zeroes gradients.

        ``grad_norm`` is the global norm before clipping. Collective: every rank calls it.
        The update is skipped on every rank (gradients zeroed, schedule not advanced) when
        the norm is not finite or when any rank passes a ``skip_reason``.
        """
        self._check_onloaded("step")
        optimizer = self.optimizer
        norm = total_grad_norm(self._params)
        norm_value = float(norm)
        lr = self.current_lr
        reason = self._skip_reason(skip_reason, norm_value)
        if reason is not None:
            optimizer.zero_grad(set_to_none=True)
            return StepResult(norm_value, lr, skipped=True, reason=reason)
        if self._optim.max_grad_norm is not None:
            clip_to_norm(self._params, self._optim.max_grad_norm, norm)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self._steps += 1
        return StepResult(norm_value, lr)

    def _skip_reason(self, local_reason: str | None, norm: float) -> str | None:
        """The reason to skip, agreed by all ranks (the norm is already global)."""
        flag = torch.tensor([0.0 if local_reason is None else 1.0], device=self._device)
        group = None if self._mesh is None else self._mesh.get_group()
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
        if local_reason is not None:
            return local_reason
        if float(flag) > 0:
            return "skip requested on another rank"
        if not math.isfinite(norm):
            return f"non-finite grad norm {norm}"
        return None

    def full_state(self) -> Iterator[tuple[str, Tensor]]:
        """(HF name, full tensor on ``device``) of every parameter and persistent buffer.

        Gathers a bucket of ``sync_bucket_bytes`` at a time, never the whole model.
        Collective: every rank must exhaust the iterator.
        """
        return full_state(self.module, device=self._device, bucket_bytes=self._bucket_bytes)

    def offload(self) -> None:
        """Moves the parameter shards, gradients and optimizer state to host memory
        (a second call before :meth:`onload` does nothing)."""
        if self._offloaded:
            return
        self.module.to(HOST)
        self._state_devices = self._move_optimizer_state(lambda param, key: HOST)
        self._offloaded = True

    def onload(self) -> None:
        """Brings them back where they were (the device, or the host with ``cpu_offload``)."""
        if not self._offloaded:
            return
        self.module.to(HOST if self._cpu_offload else self._device)
        devices = self._state_devices
        self._move_optimizer_state(lambda p, key: devices.get((id(p), key), p.device))
        self._state_devices = {}
        self._offloaded = False

    def _sharded_state(self) -> dict[str, Any]:
        return {
            "module": get_model_state_dict(self.module),
            "optimizer": get_optimizer_state_dict(self.module, self.optimizer),
            "scheduler": {"step": self._steps, "lr_scale": self._lr_scale},
        }

    def state_dict(self) -> dict[str, Any]:
        """This rank's shards of ``{"module", "optimizer", "scheduler"}`` as plain tensors.

        DTensors become their local shards, so the state is what ``torch.load`` with
        ``weights_only=True`` accepts; :meth:`load_state_dict` re-wraps them (same world size).
        """
        return local_shards(self._sharded_state())

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` output (same world size, after :meth:`prepare`).

        A checkpoint of another architecture is refused before anything changes
        (:class:`CheckpointShapeError`; the shapes it names are this rank's shards)."""
        template = self._sharded_state()
        shards = {
            key: value.to_local() if isinstance(value, DTensor) else value
            for key, value in template["module"].items()
        }
        check_weights_fit(state["module"], shards)
        restored = reshard_like(template, state)
        set_model_state_dict(self.module, restored["module"])
        set_optimizer_state_dict(self.module, self.optimizer, restored["optimizer"])
        self._steps = int(state["scheduler"]["step"])
        self._lr_scale = float(state["scheduler"].get("lr_scale", 1.0))

    def save_sharded(self, directory: str | Path) -> None:
        """Writes every rank's shards to ``directory`` (``torch.distributed.checkpoint``).

        Collective. Resume with :meth:`load_sharded`.
        """
        dcp_save(self._sharded_state(), checkpoint_id=str(directory))

    def load_sharded(self, directory: str | Path) -> None:
        """Reads what :meth:`save_sharded` wrote into the prepared module and optimizer."""
        state = self._sharded_state()
        dcp_load(state, checkpoint_id=str(directory))
        set_model_state_dict(self.module, state["module"])
        set_optimizer_state_dict(self.module, self.optimizer, state["optimizer"])
        self._steps = int(state["scheduler"]["step"])
        self._lr_scale = float(state["scheduler"].get("lr_scale", 1.0))

    def export_full_state_dict(self) -> dict[str, Tensor]:
        """The full model state on the host of rank 0 (HF names), ``{}`` on other ranks.

        Collective. For ``save_pretrained(..., state_dict=...)`` on rank 0.
        """
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        state = get_model_state_dict(self.module, options=options)
        return {clean_name(name): cast(Tensor, tensor) for name, tensor in state.items()}

    def _check_onloaded(self, action: str) -> None:
        if self._offloaded:
            raise RuntimeError(f"Fsdp2Strategy.{action} while offloaded; call onload() first")

    def _move_optimizer_state(
        self, where: Callable[[Tensor, str], torch.device]
    ) -> dict[tuple[int, str], torch.device]:
        """Moves each optimizer state tensor to ``where(param, key)``; returns where they were."""
        before: dict[tuple[int, str], torch.device] = {}
        for param, param_state in self.optimizer.state.items():
            for key, value in list(param_state.items()):
                if isinstance(value, Tensor):
                    before[(id(param), key)] = value.device
                    param_state[key] = value.to(where(param, key))
        return before


def local_shards(tree: Any) -> Any:
    """``tree`` with every DTensor replaced by its local shard (a plain tensor)."""
    if isinstance(tree, DTensor):
        return tree.to_local().detach().clone()
    if isinstance(tree, Mapping):
        return {key: local_shards(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(local_shards(value) for value in tree)
    return tree


def reshard_like(template: Any, tree: Any) -> Any:
    """``tree`` (from :func:`local_shards`) with DTensors rebuilt where ``template`` has them."""
    if isinstance(template, DTensor):
        local = tree.to(device=template.to_local().device, dtype=template.dtype)
        return DTensor.from_local(
            local,
            template.device_mesh,
            template.placements,
            shape=template.shape,
            stride=template.stride(),
        )
    if isinstance(template, Mapping):
        return {
            key: reshard_like(template[key], value) if key in template else value
            for key, value in tree.items()
        }
    if isinstance(template, (list, tuple)) and len(template) == len(tree):
        return type(tree)(reshard_like(t, v) for t, v in zip(template, tree, strict=True))
    return tree
