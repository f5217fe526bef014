"""LoRA on a reward network's backbone (PEFT), and merging it back for export.

y = W x + scaling * B A x per adapted linear layer (Hu et al., arXiv:2106.09685); B starts
at zero, so scores start unchanged. Only the adapters and the score head train. The export
merges W' = W + scaling * B A in place (PEFT's own ``merge``) and writes plain names.
"""

from __future__ import annotations

import copy

from peft import LoraConfig, inject_adapter_in_model
from peft.tuners.lora import LoraLayer
from torch import Tensor, nn

from lightrft.adapters.model_parts.lora_sizes import LoraSizes
from lightrft.adapters.model_parts.seeds import seeded_init

RewardLoraParams = LoraSizes
"""LoRA settings for the backbone (:class:`LoraSizes`); "all-linear" adapts every linear
layer of the backbone (the score head is not in it)."""


def add_lora(backbone: nn.Module, params: RewardLoraParams) -> None:
    """Injects fresh adapters into ``backbone`` in place and freezes its base weights; the
    adapters are drawn from ``params.init_seed`` without touching torch's global stream."""
    targets = params.target_modules
    if targets == "all-linear":
        targets = tuple(
            sorted(
                {
                    n.rsplit(".", 1)[-1]
                    for n, m in backbone.named_modules()
                    if isinstance(m, nn.Linear)
                }
            )
        )
    config = LoraConfig(
        r=params.rank,
        lora_alpha=params.alpha,  # type: ignore[arg-type]  # PEFT annotates int, takes float
        lora_dropout=params.dropout,
        target_modules=list(targets),
        bias="none",
    )
    with seeded_init(params.init_seed, "reward_model.lora", next(backbone.parameters()).device):
        inject_adapter_in_model(config, backbone)
    for name, parameter in backbone.named_parameters():
        parameter.requires_grad_(".lora_" in name)


def has_lora(module: nn.Module) -> bool:
    """Whether ``module`` holds LoRA layers."""
    return any(isinstance(m, LoraLayer) for m in module.modules())


def merged_state(module: nn.Module) -> dict[str, Tensor]:
    """The state dict of ``module`` with every LoRA layer merged, under the base names.

    Works on a copy; ``module`` keeps its adapters.
    """
    if not has_lora(module):
        return {k: v.detach() for k, v in module.state_dict().items()}
    merged = copy.deepcopy(module)
    for layer in merged.modules():
        if isinstance(layer, LoraLayer):
            layer.merge()
    state: dict[str, Tensor] = {}
    for name, tensor in merged.state_dict().items():
        if ".lora_" in name:
            continue
        state[name.replace(".base_layer.", ".")] = tensor.detach()
    return state
