"""Quantized rollout weights for the HF engine: which layers, and how a weight sync reaches them.

``quantize_linears`` swaps every ``nn.Linear`` of the engine's own model for an
:class:`~lightrft.adapters.hf.int8_linear.Int8Linear` (the LM head included: a head tied to
the input embedding gets an int8 copy, the embedding itself stays in the model's dtype, since
a lookup reads only the rows it needs). :class:`QuantizedTargets` then routes synced float
weights by their base-model names: a linear layer's ``.weight`` is re-quantized, everything
else (embedding, norms, biases) is copied as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from torch import Tensor, nn

from lightrft.adapters.hf.int8_linear import Int8Linear


class QuantizedTargets:
    """The int8 layers of a model, by the names of the float weights they quantize."""

    def __init__(self, layers: dict[str, list[Int8Linear]]) -> None:
        self._layers = layers

    @property
    def names(self) -> frozenset[str]:
        """Float weight names that feed an int8 layer (a tied name may feed a parameter too)."""
        return frozenset(self._layers)

    def route(
        self, weights: Iterable[tuple[str, Tensor]], own: frozenset[str]
    ) -> Iterator[tuple[str, Tensor]]:
        """Re-quantizes each quantized weight in place and yields the (name, tensor) pairs
        that are (also) a float parameter or buffer of the model (names in ``own``)."""
        for name, tensor in weights:
            for layer in self._layers.get(name, ()):
                layer.set_weight(tensor)
            if name in own or name not in self._layers:
                yield name, tensor


def quantize_linears(
    model: nn.Module, compute_dtype: torch.dtype = torch.bfloat16
) -> QuantizedTargets:
    """Replaces every ``nn.Linear`` of ``model`` (in place) by a weight-only int8 layer."""
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    layers: dict[str, list[Int8Linear]] = {}
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if type(child) is not nn.Linear:
                continue
            quantized = Int8Linear(child.weight, child.bias, compute_dtype).to(child.weight.device)
            setattr(module, child_name, quantized)
            for name in names.get(id(child.weight), []):
                layers.setdefault(name, []).append(quantized)
    if not layers:
        raise ValueError("rollout quantization int8: the engine's model has no nn.Linear layer")
    return QuantizedTargets(layers)
