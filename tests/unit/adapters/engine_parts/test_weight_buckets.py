"""Bucketing and renaming of the weights sent to an inference engine."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.engine_parts.weight_buckets import (
    bucket_weights,
    layer_group,
    rename_weights,
)


def _t(numel: int) -> torch.Tensor:
    return torch.zeros(numel, dtype=torch.float32)  # 4 bytes per element


def _names(buckets: list[list[tuple[str, torch.Tensor]]]) -> list[list[str]]:
    return [[name for name, _ in bucket] for bucket in buckets]


def test_layer_group() -> None:
    assert layer_group("model.layers.3.self_attn.q_proj.weight") == "model.layers.3"
    assert layer_group("model.layers.12.mlp.up_proj.weight") == "model.layers.12"
    assert layer_group("transformer.h.0.attn.c_attn.weight") == "transformer.h.0"
    assert layer_group("model.embed_tokens.weight") == "model.embed_tokens.weight"
    assert layer_group("lm_head.weight") == "lm_head.weight"


def test_buckets_close_at_layer_boundaries() -> None:
    # sizes in bytes: embed 40, layer0 = 40 + 40, layer1 = 40 + 40, norm 8.
    # max 100: [embed 40] + layer0 (80) = 120 > 100 -> close; layer0 80 + layer1 80 > 100
    # -> close; layer1 80 + norm 8 = 88 <= 100 -> together.
    weights = [
        ("model.embed_tokens.weight", _t(10)),
        ("model.layers.0.q.weight", _t(10)),
        ("model.layers.0.k.weight", _t(10)),
        ("model.layers.1.q.weight", _t(10)),
        ("model.layers.1.k.weight", _t(10)),
        ("model.norm.weight", _t(2)),
    ]
    assert _names(list(bucket_weights(weights, 100))) == [
        ["model.embed_tokens.weight"],
        ["model.layers.0.q.weight", "model.layers.0.k.weight"],
        ["model.layers.1.q.weight", "model.layers.1.k.weight", "model.norm.weight"],
    ]


def test_a_layer_larger_than_the_bound_travels_alone_and_unsplit() -> None:
    weights = [("a", _t(1)), ("model.layers.0.q", _t(100)), ("model.layers.0.k", _t(100))]
    assert _names(list(bucket_weights(weights, 16))) == [
        ["a"],
        ["model.layers.0.q", "model.layers.0.k"],
    ]


def test_everything_fits_in_one_bucket_and_order_is_kept() -> None:
    weights = [(f"w{i}", _t(1)) for i in range(5)]
    buckets = list(bucket_weights(weights, 1 << 20))
    assert _names(buckets) == [[f"w{i}" for i in range(5)]]
    assert buckets[0][2][1] is weights[2][1]  # tensors pass through, not copied


def test_empty_stream_gives_no_bucket() -> None:
    assert list(bucket_weights([], 10)) == []


def test_a_layer_split_across_the_stream_is_refused() -> None:
    weights = [
        ("model.layers.0.q", _t(1)),
        ("model.layers.1.q", _t(1)),
        ("model.layers.0.k", _t(1)),
    ]
    with pytest.raises(ValueError, match="model.layers.0"):
        list(bucket_weights(weights, 1 << 20))


def test_bad_bound() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        list(bucket_weights([("a", _t(1))], 0))


def test_rename_strips_the_first_matching_prefix_then_maps() -> None:
    weights = [
        ("module.model.norm.weight", _t(1)),
        ("_orig_mod.lm_head.weight", _t(1)),
        ("model.embed_tokens.weight", _t(1)),
    ]
    out = list(
        rename_weights(
            weights,
            strip_prefixes=("module.", "_orig_mod."),
            renames={"model.embed_tokens.weight": "embed.weight"},
        )
    )
    assert [n for n, _ in out] == ["model.norm.weight", "lm_head.weight", "embed.weight"]
    assert all(a[1] is b[1] for a, b in zip(out, weights, strict=True))
