"""``SingleDeviceStrategy``: the ``Strategy`` and ``Collective`` ports for one device.

AdamW (fused kernel where the device has one, else foreach) with decoupled weight decay on
matrices only (biases and norm scales, 1-D tensors, are not decayed), global-norm gradient
clipping, a warmup + decay schedule (:mod:`lightrft.adapters.strategy_parts.lr_schedule`), and
a skipped step when the gradient norm is not finite (parameters, optimizer state and the
schedule position are left unchanged; gradients are zeroed).

Low-precision trainable parameters (a model loaded in bf16 or fp16) are stepped through fp32
master copies (:mod:`lightrft.adapters.single_device.master_weights`), so small updates accumulate
instead of rounding away; fp16 ones add dynamic loss scaling
(:mod:`lightrft.adapters.single_device.loss_scale`): an overflowing step is skipped and the scale
halved.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from lightrft.adapters.single_device.loss_scale import DynamicLossScale
from lightrft.adapters.single_device.master_weights import MasterWeights
from lightrft.adapters.strategy_parts.adamw import build_adamw
from lightrft.adapters.strategy_parts.local_collective import LocalCollective
from lightrft.adapters.strategy_parts.lr_schedule import checked_lr_scale, lr_multiplier
from lightrft.adapters.strategy_parts.mixins import PreparedModule
from lightrft.domain.checkpoint_fit import check_weights_fit
from lightrft.domain.types import OptimizerParams, StepResult

HOST = torch.device("cpu")


class SingleDeviceStrategy(PreparedModule, LocalCollective):
    """Trains one module on ``device``; also the ``Collective`` of its lone process (rank 0
    of 1, from :class:`LocalCollective`).

    Args:
        device: where parameters, gradients and optimizer state live while training.
        optim: AdamW and schedule settings.
        autocast_dtype: if set (e.g. ``torch.bfloat16``), :meth:`autocast` runs forward
            passes in that dtype; parameters and optimizer state stay in their own dtype.
    """

    def __init__(
        self,
        device: torch.device,
        optim: OptimizerParams,
        *,
        autocast_dtype: torch.dtype | None = None,
    ) -> None:
        self._device = device
        self._optim = optim
        self._autocast_dtype = autocast_dtype
        self._module: nn.Module | None = None
        self._optimizer: torch.optim.Optimizer | None = None
        self._scheduler: LambdaLR | None = None
        self._lr_scale = 1.0
        self._state_devices: dict[tuple[int, str], torch.device] = {}
        self._masters = MasterWeights([])
        self._loss_scale: DynamicLossScale | None = None

    # Strategy port ----------------------------------------------------------------------
    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The AdamW optimizer built by :meth:`prepare`."""
        return self._built()[0]

    def prepare(self, module: nn.Module) -> None:
        """Moves ``module`` to the device; builds AdamW over its trainable parameters (fp32
        copies of the bf16/fp16 ones; fp16 ones also get dynamic loss scaling)."""
        module.to(self._device)
        trainable = [p for p in module.parameters() if p.requires_grad]
        self._masters = MasterWeights(trainable)
        fp16 = any(p.dtype == torch.float16 for p in trainable)
        self._loss_scale = DynamicLossScale() if fp16 else None
        self._optimizer = build_adamw(self._masters.params, self._optim)
        self._module = module
        optim = self._optim
        self._scheduler = LambdaLR(
            self._optimizer, lambda step: lr_multiplier(step, optim) * self._lr_scale
        )

    def set_lr_scale(self, scale: float) -> None:
        """Multiplies the scheduled rate of every later step by ``scale``."""
        self._lr_scale = checked_lr_scale(scale)
        optimizer, scheduler = self._built()
        for group, base, factor in zip(
            optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas, strict=True
        ):
            group["lr"] = base * factor(scheduler.last_epoch)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """Context for forward passes: ``torch.autocast`` with ``autocast_dtype``, or nothing."""
        if self._autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self._device.type, dtype=self._autocast_dtype)

    @property
    def stepped_parameters(self) -> list[nn.Parameter]:
        """What AdamW steps, in the module's order: fp32 copies of its bf16/fp16 trainable
        parameters, the fp32 ones themselves."""
        return list(self._masters.params)

    @property
    def loss_scale(self) -> float | None:
        """The fp16 loss scale (None: no fp16 parameters, no scaling)."""
        return None if self._loss_scale is None else self._loss_scale.scale

    def backward(self, loss: Tensor) -> None:
        """Accumulates the gradients of ``loss`` (a scalar; times the fp16 loss scale)."""
        if self._loss_scale is not None:
            loss = loss * self._loss_scale.scale
        torch.autograd.backward(loss)
        self._masters.gather_grads()  # accumulate low-precision gradients in fp32

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        """Clips to ``max_grad_norm``, steps AdamW and the schedule, zeroes gradients.

        ``grad_norm`` is the global L2 norm before clipping and ``lr`` the rate this step
        used. A non-finite norm or a caller's ``skip_reason`` skips the update
        (``skipped=True`` with the reason; gradients are zeroed, the schedule stays).
        """
        optimizer, scheduler = self._built()
        self._masters.gather_grads()
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if self._loss_scale is not None:
            for grad in grads:
                grad.div_(self._loss_scale.scale)
        lr = float(optimizer.param_groups[0]["lr"])
        norm = _global_norm(grads)
        norm_value = float(norm)
        if skip_reason is None and self._loss_scale is not None:
            self._loss_scale.update(finite=math.isfinite(norm_value))
            if not math.isfinite(norm_value):
                skip_reason = f"fp16 gradient overflow; loss scale now {self._loss_scale.scale:g}"
        if skip_reason is not None or not math.isfinite(norm_value):
            optimizer.zero_grad(set_to_none=True)
            reason = skip_reason or f"non-finite grad norm {norm_value}"
            return StepResult(norm_value, lr, skipped=True, reason=reason)
        if self._optim.max_grad_norm is not None:
            coef = torch.clamp(self._optim.max_grad_norm / (norm + 1e-6), max=1.0)
            for grad in grads:
                grad.mul_(coef.to(grad.device, grad.dtype))
        optimizer.step()
        self._masters.write_back()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return StepResult(norm_value, lr)

    def full_state(self) -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) of the module's state dict, detached, one at a time."""
        for name, tensor in self.module.state_dict().items():
            yield name, tensor.detach()

    def export_full_state_dict(self) -> dict[str, Tensor]:
        """The module's state dict, detached, in host memory (one process: it is rank 0)."""
        return {name: tensor.detach().to(HOST) for name, tensor in self.full_state()}

    def offload(self) -> None:
        """Moves parameters, gradients and optimizer state to host memory."""
        self.module.to(HOST)
        self._masters.move(HOST)
        self._state_devices = self._move_optimizer_state(lambda param, key: HOST)

    def onload(self) -> None:
        """Brings parameters and optimizer state back to where they were."""
        self.module.to(self._device)
        self._masters.move(self._device)
        devices = self._state_devices
        self._move_optimizer_state(lambda param, key: devices.get((id(param), key), self._device))
        self._state_devices = {}

    def state_dict(self) -> dict[str, Any]:
        """A snapshot of the ``{"module", "optimizer", "scheduler", "lr_scale"}`` states,
        plus ``"master_weights"`` (fp32 copies) and ``"loss_scale"`` where they exist.

        Tensors are copies: training after the call does not change what was returned.
        """
        optimizer, scheduler = self._built()
        state: dict[str, Any] = {
            "module": self.module.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "lr_scale": self._lr_scale,
        }
        if self._masters.active:
            state["master_weights"] = self._masters.state()
        if self._loss_scale is not None:
            state["loss_scale"] = self._loss_scale.state_dict()
        return copy.deepcopy(state)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` output (after :meth:`prepare` of the same module)."""
        optimizer, scheduler = self._built()
        check_weights_fit(state["module"], self.module.state_dict())  # before any change
        self._lr_scale = float(state.get("lr_scale", 1.0))  # saved rates include it
        self.module.load_state_dict(state["module"])
        self._masters.load(state.get("master_weights"))
        if self._loss_scale is not None and "loss_scale" in state:
            self._loss_scale.load_state_dict(state["loss_scale"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])

    # helpers ----------------------------------------------------------------------------
    def _built(self) -> tuple[torch.optim.Optimizer, LambdaLR]:
        if self._optimizer is None or self._scheduler is None:
            raise RuntimeError("call prepare(module) first")
        return self._optimizer, self._scheduler

    def _move_optimizer_state(
        self, where: Callable[[Tensor, str], torch.device]
    ) -> dict[tuple[int, str], torch.device]:
        """Moves each optimizer state tensor to ``where(param, key)``; returns where they were."""
        optimizer, _ = self._built()
        before: dict[tuple[int, str], torch.device] = {}
        for param, param_state in optimizer.state.items():
            for key, value in list(param_state.items()):
                if isinstance(value, Tensor):
                    before[(id(param), key)] = value.device
                    param_state[key] = value.to(where(param, key))
        return before


def _global_norm(grads: list[Tensor]) -> Tensor:
    """L2 norm over all gradients, float32 scalar (0 when there are none)."""
    if not grads:
        return torch.zeros(())
    norms = [torch.linalg.vector_norm(g.detach(), 2.0, dtype=torch.float32) for g in grads]
    total: Tensor = torch.linalg.vector_norm(torch.stack([n.to(norms[0].device) for n in norms]))
    return total
