"""Where a model's weights live: in-place loading by name, offload to host, discard, restore.

Used by the rollout engine. Tied parameters (e.g. ``lm_head.weight`` and
``model.embed_tokens.weight``) are one tensor; loading either name fills both.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn

HOST = torch.device("cpu")
META = torch.device("meta")


def module_device(model: nn.Module) -> torch.device:
    """Where ``model``'s first parameter lives (the host for a module without any): the
    device its inputs must be on."""
    for param in model.parameters():
        return param.device
    return HOST


def frozen_on(model: nn.Module, device: torch.device) -> None:
    """Eval mode, no gradients, weights on ``device`` (in place)."""
    model.requires_grad_(False)
    model.train(False)
    model.to(device)


class ModelWeights:
    """Manages the parameters and buffers of ``model``, which normally sit on ``device``."""

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        self._model = model
        self._device = device
        self._saved_buffers: dict[str, Tensor] = {}
        self._discarded = False
        self.missing: set[str] = set()
        """Parameter names that must be loaded before the model may run (after a discard)."""

    def load(self, weights: Iterable[tuple[str, Tensor]]) -> None:
        """Copies each (name, tensor) into the parameter or buffer of that name.

        Raises ``KeyError`` for an unknown name, ``ValueError`` for a shape mismatch and
        ``RuntimeError`` while the weights are discarded (wake up first).
        """
        params = dict(self._model.named_parameters(remove_duplicate=False))
        canonical = {id(p): n for n, p in self._model.named_parameters()}
        buffers = dict(self._model.named_buffers())
        with torch.no_grad():
            for name, tensor in weights:
                target: Tensor | None = params.get(name)
                if target is None:
                    target = buffers.get(name)
                if target is None:
                    raise KeyError(f"the engine's model has no parameter or buffer {name!r}")
                if target.device == META:
                    raise RuntimeError("the weights are discarded while asleep; wake_up() first")
                if target.shape != tensor.shape:
                    raise ValueError(
                        f"{name}: engine shape {tuple(target.shape)} but got {tuple(tensor.shape)}"
                    )
                target.copy_(tensor)
                self.missing.discard(canonical.get(id(target), name))

    def named(self, names: Iterable[str]) -> Iterable[tuple[str, Tensor]]:
        """The current parameter or buffer of each name (``KeyError`` for an unknown one)."""
        params = dict(self._model.named_parameters(remove_duplicate=False))
        buffers = dict(self._model.named_buffers())
        for name in names:
            found = params.get(name)
            if found is None:
                found = buffers[name]
            yield name, found

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype of the parameters (loaded tensors are cast to it)."""
        first = next(iter(self._model.parameters()), None)
        return None if first is None else first.dtype

    def offload(self) -> None:
        """Moves everything to host memory."""
        self._model.to(HOST)

    def discard(self) -> None:
        """Frees every parameter (to the meta device); buffers are kept in host memory."""
        self._saved_buffers = {
            name: buf.detach().to(HOST, copy=True) for name, buf in self._model.named_buffers()
        }
        self._model.to(META)
        self._discarded = True

    def restore(self) -> None:
        """Back on the device: moved (after offload) or allocated empty (after discard)."""
        if not self._discarded:
            self._model.to(self._device)
            return
        self._model.to_empty(device=self._device)
        tie = getattr(self._model, "tie_weights", None)
        if callable(tie):
            tie()
        with torch.no_grad():
            for name, buf in self._model.named_buffers():
                buf.copy_(self._saved_buffers[name])
        self._saved_buffers = {}
        self._discarded = False
        self.missing = {name for name, _ in self._model.named_parameters()}
