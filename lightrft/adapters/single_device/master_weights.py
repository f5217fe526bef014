"""fp32 master copies of low-precision trainable parameters (mixed-precision training).

A model held in bf16 or fp16 cannot take small updates: at a learning rate of 1e-6 an Adam
step (about ``lr`` per element) is far below half a bf16 unit in the last place of a weight
of magnitude 1e-2 (about 4e-5), so it rounds away and the weight never moves. As in
DeepSpeed's bf16 optimizer and Megatron's mixed precision, the optimizer steps an fp32 copy
of each such parameter; its gradient is the sum of the low-precision gradients of the
micro-batches, each upcast, and after each step the copy is rounded back into the model for
the next forward pass. Parameters already
in fp32 (e.g. PEFT's LoRA adapters, which it keeps in fp32) are stepped directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

LOW_PRECISION = (torch.bfloat16, torch.float16)


class MasterWeights:
    """The parameters an optimizer steps for ``params``: fp32 copies of the low-precision
    ones, the fp32 ones themselves; :attr:`params` keeps ``params``' order."""

    def __init__(self, params: Sequence[nn.Parameter]) -> None:
        self._pairs: list[tuple[nn.Parameter, nn.Parameter]] = []
        self.params: list[nn.Parameter] = []
        for param in params:
            if param.dtype in LOW_PRECISION:
                master = nn.Parameter(param.detach().float().clone())
                self._pairs.append((param, master))
                self.params.append(master)
            else:
                self.params.append(param)

    @property
    def active(self) -> bool:
        """Whether any parameter has an fp32 copy."""
        return bool(self._pairs)

    def gather_grads(self) -> None:
        """Adds each model gradient onto its copy's, upcast to fp32, and drops the model's
        (after every backward, so micro-batches accumulate in fp32, not in bf16)."""
        for param, master in self._pairs:
            if param.grad is None:
                continue
            grad = param.grad.float()
            master.grad = grad if master.grad is None else master.grad.add_(grad)
            param.grad = None

    def zero_grads(self) -> None:
        """Drops the gradients of the model parameters that have copies."""
        for param, _ in self._pairs:
            param.grad = None

    @torch.no_grad()
    def write_back(self) -> None:
        """Rounds each fp32 copy into its model parameter (after an optimizer step)."""
        for param, master in self._pairs:
            param.copy_(master)

    def state(self) -> list[Tensor]:
        """Clones of the fp32 copies, in order (for a checkpoint)."""
        return [master.detach().clone() for _, master in self._pairs]

    @torch.no_grad()
    def load(self, saved: Sequence[Tensor] | None) -> None:
        """Restores :meth:`state` output; ``None`` (a checkpoint from before fp32 copies)
        takes them from the model parameters."""
        if saved is not None and len(saved) != len(self._pairs):
            raise ValueError(f"expected {len(self._pairs)} fp32 master weights, got {len(saved)}")
        for i, (param, master) in enumerate(self._pairs):
            master.copy_(param if saved is None else saved[i])

    def move(self, device: torch.device) -> None:
        """Moves the fp32 copies (and their gradients) to ``device``."""
        for _, master in self._pairs:
            master.data = master.data.to(device)
            if master.grad is not None:
                master.grad = master.grad.to(device)
