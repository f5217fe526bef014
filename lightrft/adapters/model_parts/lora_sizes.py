"""``LoraSizes``: the LoRA settings every LoRA adapter takes (the policy's in ``hf``, the
reward model's in ``reward_models``), checked once.

y = W x + scaling * B A x per adapted linear layer, A (r, in) random, B (out, r) zero
(Hu et al., arXiv:2106.09685); scaling = alpha / r.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoraSizes:
    """``rank`` r, ``alpha`` (scaling alpha / r), ``dropout`` on the adapters' input,
    ``target_modules`` ("all-linear" or layer-name suffixes such as ``("q_proj", "v_proj")``),
    ``init_seed`` for the fresh adapters (pass the run's seed, so two runs, and the ranks of
    one run, start from the same adapters)."""

    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: str | tuple[str, ...] = "all-linear"
    init_seed: int = 0

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"lora rank must be >= 1, got {self.rank}")
        if self.alpha <= 0:
            raise ValueError(f"lora alpha must be > 0, got {self.alpha}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"lora dropout must be in [0, 1), got {self.dropout}")
