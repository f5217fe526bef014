"""How a scalar reward model reads its scores from the backbone's hidden states: which layer
(the probing layer), how a row is pooled into one vector (last token, mean, attention
pooling), and which score heads read it (one per named aspect), as the original LightRFT's
scalar reward models offer them (``--pooling_method``, ``--probing_layer``, ``--heads_types``,
``--scale_for_train``).

Shape letters: B rows, T tokens, H hidden size, K heads.

- Probing layer k: the backbone's ``output_hidden_states[k]`` (index 0 is the embeddings'
  output, index i the output of layer i); a negative k counts from the layer count L as in
  the original, k -> L + k, so -1 reads ``hidden_states[L - 1]``, the input of the last
  layer. ``None`` (the default) reads the backbone's final, normed ``last_hidden_state``.
- Pooling (:data:`POOLINGS`): ``last``, the hidden state of the last attended token (left or
  right padding alike); ``mean``, the mean over attended tokens; ``attn``, a learned query
  attending over the attended tokens (multi-head, keys and values projected, logits scaled by
  1 / sqrt(head size), padding masked out, so each head's weights sum to 1 over the row's
  tokens). With ``attn`` every named head has its own pooling, as in the original.
- Heads: with no names, the classifier's own linear head (the HF export path); with names,
  one head per name, ``linear`` (Linear(H, 1)) or ``mlp`` (the original's: Linear(H, H),
  RMSNorm, SiLU, Linear(H, 1) without bias, sigmoid: scores in (0, 1)).
- ``scale_for_train``: each head has a learned logit scale s (initial log(1 / 0.07), CLIP's
  temperature) and in training mode its score is multiplied by exp(s), as in the original,
  so that bounded (sigmoid) scores can still give the pairwise loss large logit gaps; in
  eval mode (scoring) the scores are unscaled.
- Combination: scoring returns each head's score and sum_k w_k s_k (``weights``, by default
  equal weights 1/K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from lightrft.domain.preference import last_token_index
from lightrft.domain.registry import Registry

CLIP_LOGIT_SCALE = math.log(1 / 0.07)
"""The initial logit scale of ``scale_for_train`` (the original's, CLIP's temperature)."""

HEAD_ARCHS = ("linear", "mlp")


@dataclass(frozen=True)
class HeadSpec:
    """Where and how scores are read (module docstring). The default reads the final hidden
    state of the last attended token with the classifier's linear head (a plain HF reward
    model)."""

    pooling: str = "last"
    probing_layer: int | None = None
    heads: tuple[str, ...] = ()
    head_arch: str = "linear"
    scale_for_train: bool = False
    weights: tuple[float, ...] = ()
    attn_heads: int = 4

    def __post_init__(self) -> None:
        POOLINGS.get(self.pooling)
        if self.head_arch not in HEAD_ARCHS:
            raise ValueError(f"head_arch must be one of {HEAD_ARCHS}, got {self.head_arch!r}")
        if len(set(self.heads)) != len(self.heads) or not all(self.heads):
            raise ValueError(f"head names must be distinct and non-empty, got {self.heads}")
        if self.weights and len(self.weights) != max(1, len(self.heads)):
            raise ValueError(
                f"{len(self.weights)} head weights for {max(1, len(self.heads))} head(s)"
            )
        if self.head_arch == "mlp" and not self.heads:
            raise ValueError("head_arch 'mlp' needs named heads (heads)")
        if self.attn_heads < 1:
            raise ValueError(f"attn_heads must be >= 1, got {self.attn_heads}")

    @property
    def names(self) -> tuple[str, ...]:
        """The heads' names (``("score",)`` for the classifier's own head)."""
        return self.heads or ("score",)

    @property
    def combination(self) -> tuple[float, ...]:
        """Each head's weight in the combined score."""
        k = len(self.names)
        return self.weights or tuple(1.0 / k for _ in range(k))

    @property
    def plain(self) -> bool:
        """True when the scores are a plain HF classifier's (nothing beyond its own head)."""
        return self == HeadSpec()

    def to_json(self) -> dict[str, Any]:
        return {
            "pooling": self.pooling,
            "probing_layer": self.probing_layer,
            "heads": list(self.heads),
            "head_arch": self.head_arch,
            "scale_for_train": self.scale_for_train,
            "weights": list(self.weights),
            "attn_heads": self.attn_heads,
        }

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> HeadSpec:
        return cls(
            pooling=str(payload["pooling"]),
            probing_layer=payload["probing_layer"],
            heads=tuple(payload["heads"]),
            head_arch=str(payload["head_arch"]),
            scale_for_train=bool(payload["scale_for_train"]),
            weights=tuple(float(w) for w in payload["weights"]),
            attn_heads=int(payload["attn_heads"]),
        )


def probed_index(probing_layer: int, num_layers: int) -> int:
    """The index into ``output_hidden_states`` of ``probing_layer`` (negative: from
    ``num_layers``, as the original); ``ValueError`` outside [0, num_layers)."""
    index = num_layers + probing_layer if probing_layer < 0 else probing_layer
    if not 0 <= index < num_layers:
        raise ValueError(
            f"probing_layer {probing_layer} is out of range for a backbone of {num_layers} "
            f"layers (expected {-num_layers} .. {num_layers - 1})"
        )
    return index


class AttentionPooling(nn.Module):
    """A learned query attending over a row's attended tokens: (B, T, H) -> (B, H).

    ``num_heads`` heads of size H / num_heads; keys and values are linear projections
    without bias; the query starts as N(0, 0.02^2) per coordinate."""

    def __init__(self, hidden_size: int, num_heads: int = 4) -> None:
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden size {hidden_size} does not divide into {num_heads} heads")
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.k = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v = nn.Linear(hidden_size, hidden_size, bias=False)
        self.query = nn.Parameter(torch.randn(hidden_size) * 0.02)

    def weights(self, hidden: Tensor, attention_mask: Tensor) -> Tensor:
        """Attention weights (B, heads, T): softmax over the attended tokens (0 on padding)."""
        b, t, _ = hidden.shape
        k = self.k(hidden).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        q = self.query.view(1, self.num_heads, 1, self.head_dim).to(k.dtype)
        logits = (q * k).sum(-1) / math.sqrt(self.head_dim)  # [B, heads, T]
        attended = attention_mask.bool()[:, None, :]
        logits = logits.masked_fill(~attended, torch.finfo(logits.dtype).min)
        return torch.softmax(logits.float(), dim=-1).to(hidden.dtype)

    def forward(self, hidden: Tensor, attention_mask: Tensor) -> Tensor:
        b, t, h = hidden.shape
        v = self.v(hidden).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        weights = self.weights(hidden, attention_mask)  # [B, heads, T]
        pooled = (weights.unsqueeze(-1) * v).sum(dim=2)  # [B, heads, D]
        return pooled.reshape(b, h)


def pool_last(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """The hidden state of each row's last attended token: (B, T, H) -> (B, H)."""
    last = last_token_index(attention_mask)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def pool_mean(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """The mean hidden state over each row's attended tokens: (B, T, H) -> (B, H)."""
    last_token_index(attention_mask)  # checks every row attends to a token
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1)


POOLINGS: Registry[str] = Registry("pooling method")
"""Pooling names -> what they read (the learned ``attn`` is a module; the others functions)."""
POOLINGS.add("last", "the last attended token")
POOLINGS.add("mean", "the mean over attended tokens")
POOLINGS.add("attn", "a learned query attending over the attended tokens")
_POOL_FNS = {"last": pool_last, "mean": pool_mean}


def _head(arch: str, hidden_size: int) -> nn.Module:
    if arch == "linear":
        return nn.Linear(hidden_size, 1)
    return nn.Sequential(
        nn.Linear(hidden_size, hidden_size),
        nn.RMSNorm(hidden_size),
        nn.SiLU(),
        nn.Linear(hidden_size, 1, bias=False),
        nn.Sigmoid(),
    )


class ScoreHeads(nn.Module):
    """Pooling, heads and logit scales of a :class:`HeadSpec`: hidden (B, T, H) -> scores
    (B, K). ``own_head``: the classifier's linear head, used when the spec names no heads."""

    def __init__(self, spec: HeadSpec, hidden_size: int, own_head: nn.Linear | None) -> None:
        super().__init__()
        self.spec = spec
        names = spec.names
        self.heads = nn.ModuleDict(
            {name: _head(spec.head_arch, hidden_size) for name in spec.heads}
        )
        self._own: list[nn.Linear] = [own_head] if own_head is not None and not spec.heads else []
        self.pools = nn.ModuleDict(
            {name: AttentionPooling(hidden_size, spec.attn_heads) for name in names}
            if spec.pooling == "attn"
            else {}
        )
        self.logit_scales = nn.ParameterDict(
            {name: nn.Parameter(torch.full((1,), CLIP_LOGIT_SCALE)) for name in names}
            if spec.scale_for_train
            else {}
        )

    def _score(self, name: str, pooled: Tensor) -> Tensor:
        head = self.heads[name] if name in self.heads else self._own[0]
        return head(pooled).squeeze(-1)

    def forward(self, hidden: Tensor, attention_mask: Tensor) -> Tensor:
        columns = []
        for name in self.spec.names:
            if name in self.pools:
                pooled = self.pools[name](hidden, attention_mask)
            else:
                pooled = _POOL_FNS[self.spec.pooling](hidden, attention_mask)
            score = self._score(name, pooled).float()
            if self.training and name in self.logit_scales:
                score = score * self.logit_scales[name].float().exp()
            columns.append(score)
        return torch.stack(columns, dim=-1)  # [B, K]

    def combine(self, scores: Tensor) -> Tensor:
        """sum_k w_k scores[:, k]: (B, K) -> (B,)."""
        weights = torch.tensor(self.spec.combination, dtype=scores.dtype, device=scores.device)
        return scores @ weights


def backbone_layers(config: Any) -> int:
    """The number of decoder layers of a (possibly multimodal) backbone's config."""
    for candidate in (config, getattr(config, "text_config", None)):
        layers = getattr(candidate, "num_hidden_layers", None)
        if isinstance(layers, int):
            return layers
    raise ValueError(f"cannot find the layer count of a {type(config).__name__}")


__all__ = [
    "POOLINGS",
    "AttentionPooling",
    "HeadSpec",
    "ScoreHeads",
    "backbone_layers",
    "pool_last",
    "pool_mean",
    "probed_index",
]
