"""LoRA through PEFT: wrapping a model, and merging adapters into engine-facing weights.

A LoRA layer computes y = W x + scaling * B A x, with A (r, in), B (out, r) and
scaling = alpha / r (alpha / sqrt(r) with rsLoRA) (Hu et al., arXiv:2106.09685, eq. 3).
The merged weight an inference engine loads is W' = W + scaling * B @ A (transposed for
Conv1D layers that store W as (in, out)), under the base model's parameter names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from torch import Tensor, nn

from lightrft.adapters.model_parts.lora_sizes import LoraSizes
from lightrft.adapters.model_parts.seeds import seeded_init

PEFT_PREFIX = "base_model.model."
"""Prefix PEFT puts before every name of the wrapped model."""


@dataclass(frozen=True)
class LoraParams(LoraSizes):
    """The policy's LoRA settings (:class:`LoraSizes`); ``target_modules="all-linear"`` adapts
    every linear layer except the output head; ``use_rslora`` scales by alpha / sqrt(r)."""

    use_rslora: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.target_modules, str) and self.target_modules != "all-linear":
            raise ValueError(
                f"target_modules must be 'all-linear' or a tuple of module names, got "
                f"{self.target_modules!r}"
            )


class LoraLayerInfo(NamedTuple):
    """What merging one LoRA layer needs besides its tensors."""

    scaling: float
    fan_in_fan_out: bool


def apply_lora(model: nn.Module, params: LoraParams) -> PeftModel:
    """Wraps ``model`` with fresh LoRA adapters (B = 0, so outputs start unchanged).

    Only the adapter weights keep ``requires_grad``; the base weights are frozen. The
    random A matrices are drawn from ``params.init_seed`` (:func:`seeded_init`), without
    touching torch's global random stream.
    """
    targets = params.target_modules
    config = LoraConfig(
        r=params.rank,
        lora_alpha=params.alpha,  # type: ignore[arg-type]  # PEFT annotates int, takes float
        lora_dropout=params.dropout,
        target_modules=targets if isinstance(targets, str) else list(targets),
        use_rslora=params.use_rslora,
        bias="none",
        task_type="CAUSAL_LM",
    )
    device = next(model.parameters()).device
    with seeded_init(params.init_seed, "lora", device):
        return get_peft_model(model, config)


def lora_layers(model: PeftModel) -> dict[str, LoraLayerInfo]:
    """Scaling and layout of every LoRA layer of the active adapter, by module name."""
    adapter = model.active_adapter
    info: dict[str, LoraLayerInfo] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter in module.lora_A:
            info[name] = LoraLayerInfo(
                float(module.scaling[adapter]), bool(getattr(module, "fan_in_fan_out", False))
            )
    return info


def merged_weights(
    state: Iterable[tuple[str, Tensor]], layers: dict[str, LoraLayerInfo], adapter: str
) -> Iterator[tuple[str, Tensor]]:
    """Streams a PEFT model's state as base-model names with the LoRA deltas merged in.

    ``state`` yields (name, tensor) of the PEFT-wrapped module, one at a time; a layer's
    base weight, A and B are held only until all three have arrived. Raises ``ValueError``
    on adapter tensors it cannot merge or on a layer whose tensors never all arrived.
    """
    pending: dict[str, dict[str, Tensor]] = {}
    for name, tensor in state:
        layer, role = _split_lora_name(name, layers, adapter)
        if layer is None:
            if ".lora_" not in name:  # tensors of inactive adapters are dropped
                yield _base_name(name), tensor
            continue
        if role == "bias":
            yield _base_name(f"{layer}.bias"), tensor
            continue
        parts = pending.setdefault(layer, {})
        parts[role] = tensor
        if len(parts) == 3:
            del pending[layer]
            merged = merge_lora(parts["W"], parts["A"], parts["B"], layers[layer])
            yield _base_name(f"{layer}.weight"), merged
    if pending:
        raise ValueError(f"LoRA layers with missing tensors in the state: {sorted(pending)[:5]}")


def merge_lora(weight: Tensor, lora_a: Tensor, lora_b: Tensor, info: LoraLayerInfo) -> Tensor:
    """W + scaling * B @ A in float32, cast back to W's dtype. Shapes: W (out, in) (or
    (in, out) with ``fan_in_fan_out``), A (r, in), B (out, r)."""
    delta = lora_b.to(torch.float32) @ lora_a.to(torch.float32) * info.scaling  # [out, in]
    if info.fan_in_fan_out:
        delta = delta.T
    return (weight.to(torch.float32) + delta.to(weight.device)).to(weight.dtype)


def _split_lora_name(
    name: str, layers: dict[str, LoraLayerInfo], adapter: str
) -> tuple[str | None, str]:
    """(layer name, role in {"W", "A", "B", "bias"}) for tensors of a LoRA layer."""
    suffixes = {
        ".base_layer.weight": "W",
        ".base_layer.bias": "bias",
        f".lora_A.{adapter}.weight": "A",
        f".lora_B.{adapter}.weight": "B",
    }
    for suffix, role in suffixes.items():
        if name.endswith(suffix) and name[: -len(suffix)] in layers:
            return name[: -len(suffix)], role
    parts = name.split(".")
    if adapter in parts and any(part.startswith("lora_") for part in parts):
        raise ValueError(
            f"cannot merge LoRA tensor {name!r}: only Linear/Conv1D LoRA without DoRA or LoRA "
            "bias is supported"
        )
    return None, ""


def _base_name(name: str) -> str:
    """PEFT name -> base model name: drops the ``base_model.model.`` prefix and ``.base_layer``."""
    if name.startswith(PEFT_PREFIX):
        name = name[len(PEFT_PREFIX) :]
    return name.replace(".base_layer.", ".")
