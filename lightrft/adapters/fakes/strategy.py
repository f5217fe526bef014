"""``FakeStrategy``: the ``Strategy`` port as a real single-process trainer (torch AdamW).

No sharding and no collectives; everything else is what a real backend does: gradient
norm before clipping, clipping, warmup + constant/linear/cosine schedule
(:mod:`lightrft.adapters.strategy_parts.lr_schedule`), skipping a step whose gradient norm is not
finite (the schedule does not advance on a skipped step), deep-copied state for
checkpoints, and offload/onload bookkeeping.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.fakes.fake_model import RecordedPlacement
from lightrft.adapters.strategy_parts.lr_schedule import lr_multiplier as lr_factor
from lightrft.adapters.strategy_parts.mixins import LrScaled
from lightrft.domain.types import OptimizerParams, StepResult

NON_FINITE_REASON = "non-finite gradient norm"


class FakeStrategy(LrScaled, RecordedPlacement):
    """Trains one module on one device.

    Records ``backward_calls``, ``steps`` (applied), ``skipped_steps``, ``step_results``,
    ``offloads`` and ``onloads``. ``backward``/``step`` while offloaded or before
    ``prepare`` raise ``RuntimeError``.
    """

    def __init__(
        self, params: OptimizerParams | None = None, *, device: torch.device | None = None
    ) -> None:
        self.params = params or OptimizerParams()
        self.device = device or torch.device("cpu")
        self._module: nn.Module | None = None
        self._optimizer: torch.optim.AdamW | None = None
        self._schedule_step = 0
        self._lr_scale = 1.0
        self.backward_calls = 0
        self.steps = 0
        self.skipped_steps = 0
        self.step_results: list[StepResult] = []

    @property
    def module(self) -> nn.Module:
        """The prepared module."""
        if self._module is None:
            raise RuntimeError("FakeStrategy.prepare has not been called")
        return self._module

    @property
    def optimizer(self) -> torch.optim.AdamW:
        """The AdamW optimizer built by ``prepare``."""
        if self._optimizer is None:
            raise RuntimeError("FakeStrategy.prepare has not been called")
        return self._optimizer

    @property
    def current_lr(self) -> float:
        """Learning rate of the next optimizer step."""
        return self.params.lr * lr_factor(self._schedule_step, self.params) * self._lr_scale

    def prepare(self, module: nn.Module) -> None:
        """Moves ``module`` to the device and builds AdamW over its trainable parameters."""
        if self._module is not None:
            raise RuntimeError("FakeStrategy trains one module; prepare was already called")
        module.to(self.device)
        trainable = [p for p in module.parameters() if p.requires_grad]
        self._module = module
        self._optimizer = torch.optim.AdamW(
            trainable,
            lr=self.current_lr,
            betas=self.params.betas,
            eps=self.params.eps,
            weight_decay=self.params.weight_decay,
        )

    def _check_ready(self, action: str) -> None:
        if self._module is None:
            raise RuntimeError(f"FakeStrategy.{action} before prepare")
        if self.is_offloaded:
            raise RuntimeError(f"FakeStrategy.{action} while offloaded; onload first")

    def backward(self, loss: Tensor) -> None:
        """Accumulates the gradients of ``loss`` (a scalar)."""
        self._check_ready("backward")
        self.backward_calls += 1
        torch.autograd.backward(loss)

    def _grad_norm(self) -> float:
        """L2 norm of all gradients together (0.0 when there are none)."""
        grads = [p.grad for p in self.module.parameters() if p.grad is not None]
        if not grads:
            return 0.0
        norms = torch.stack([torch.linalg.vector_norm(g.detach().float()) for g in grads])
        return float(torch.linalg.vector_norm(norms))

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        """Clips to ``max_grad_norm``, steps AdamW at the scheduled rate, zeroes gradients.

        Skips (gradients zeroed, no update) on a non-finite norm or a caller's ``skip_reason``.
        """
        self._check_ready("step")
        optimizer = self.optimizer
        lr = self.current_lr
        norm = self._grad_norm()
        if skip_reason is not None or not math.isfinite(norm):
            optimizer.zero_grad(set_to_none=True)
            self.skipped_steps += 1
            reason = skip_reason if skip_reason is not None else NON_FINITE_REASON
            result = StepResult(grad_norm=norm, lr=lr, skipped=True, reason=reason)
            self.step_results.append(result)
            return result
        max_norm = self.params.max_grad_norm
        if max_norm is not None and norm > max_norm:
            scale = max_norm / (norm + 1e-6)
            for p in self.module.parameters():
                if p.grad is not None:
                    p.grad.mul_(scale)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self._schedule_step += 1
        self.steps += 1
        result = StepResult(grad_norm=norm, lr=lr)
        self.step_results.append(result)
        return result

    def full_state(self) -> Iterator[tuple[str, Tensor]]:
        """``named_parameters`` as detached clones, one at a time."""
        for name, param in self.module.named_parameters():
            yield name, param.detach().clone()

    def export_full_state_dict(self) -> dict[str, Tensor]:
        """Every parameter, detached and cloned (the fake is always rank 0)."""
        return dict(self.full_state())

    def state_dict(self) -> dict[str, Any]:
        """Deep copies of module, optimizer and schedule state."""
        return {
            "module": copy.deepcopy(self.module.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "scheduler": {"step": self._schedule_step, "lr_scale": self._lr_scale},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores (deep copies of) what ``state_dict`` returned."""
        self.module.load_state_dict(copy.deepcopy(dict(state["module"])))
        self.optimizer.load_state_dict(copy.deepcopy(dict(state["optimizer"])))
        self._schedule_step = int(state["scheduler"]["step"])
        self._lr_scale = float(state["scheduler"].get("lr_scale", 1.0))
