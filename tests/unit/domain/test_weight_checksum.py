"""Weight checksums: independent of order, sensitive to any changed bit, name, dtype or shape."""

from __future__ import annotations

import torch

from lightrft.domain.weight_checksum import DigestingStream, weights_checksum

W = {"a.weight": torch.arange(6.0).reshape(2, 3), "b.bias": torch.tensor([0.5, -1.0])}


def test_the_order_of_the_tensors_does_not_matter() -> None:
    assert weights_checksum(W.items()) == weights_checksum(reversed(list(W.items())))


def test_one_changed_bit_name_or_shape_changes_the_checksum() -> None:
    base = weights_checksum(W.items())
    nudged = W["a.weight"].clone()
    nudged.view(torch.int32)[0, 0] ^= 1  # the lowest mantissa bit of one element
    assert weights_checksum({**W, "a.weight": nudged}.items()) != base
    assert weights_checksum({"a.weight2": W["a.weight"], "b.bias": W["b.bias"]}.items()) != base
    assert weights_checksum({**W, "a.weight": W["a.weight"].reshape(3, 2)}.items()) != base


def test_a_cast_to_the_engine_dtype_matches_an_engine_holding_that_dtype() -> None:
    engine = {n: t.to(torch.bfloat16) for n, t in W.items()}
    assert weights_checksum(W.items(), torch.bfloat16) == weights_checksum(engine.items())
    assert weights_checksum(W.items()) != weights_checksum(engine.items())


def test_the_stream_passes_tensors_through_and_digests_them() -> None:
    stream = DigestingStream(W.items(), None)
    assert [name for name, _ in stream] == list(W)
    assert stream.names == list(W)
    assert stream.checksum() == weights_checksum(W.items())
