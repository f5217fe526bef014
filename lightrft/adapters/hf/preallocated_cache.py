"""A KV cache written in place into buffers sized for the whole generation.

Shape letters: B rows, H key/value heads, C capacity (prompt + new tokens), L tokens held,
S tokens added by one forward, D head dim.

``transformers``' ``DynamicCache`` appends each decode step's key and value with
``torch.cat``, which copies the whole cache of every layer at every step (quadratic in the
generated length); ``StaticCache`` writes in place but attends over its full capacity at
every step and cannot drop rows. :func:`preallocated_cache` keeps ``DynamicCache``'s
behaviour (attention over the L tokens held, rows dropped with ``reorder_cache``) with the
storage of a static cache: each full-attention layer writes into a (B, H, C, D) buffer and
returns a view of its first L positions. Layers of other kinds (sliding window, linear
attention) keep their own ``transformers`` implementation.

:func:`check_cache_fits` sizes those buffers before anything is allocated and refuses, in
one line naming ``rollout.max_new_tokens``, a cache larger than the free memory of its
device (a mistyped budget used to take the machine's memory until the kernel killed the
run).
"""

from __future__ import annotations

import os

import torch
from torch import Tensor
from transformers import DynamicCache, PretrainedConfig
from transformers.cache_utils import DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """One layer's keys and values in (B, H, C, D) buffers, filled from position 0."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.length = 0
        self._key_buffer: Tensor | None = None
        self._value_buffer: Tensor | None = None

    def update(self, key_states: Tensor, value_states: Tensor, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        """Writes (B, H, S, D) states after the L held; returns views of all L + S."""
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            raise ValueError(
                f"the preallocated KV cache holds {self.capacity} positions; "
                f"{end} were written (size it as prompt + max new tokens)"
            )
        if self._key_buffer is None or self._value_buffer is None:
            self.dtype, self.device = key_states.dtype, key_states.device
            shape = (*key_states.shape[:2], self.capacity, key_states.shape[-1])
            self._key_buffer = key_states.new_empty(shape)
            self._value_buffer = value_states.new_empty((*shape[:3], value_states.shape[-1]))
            self.is_initialized = True
        self._key_buffer[:, :, self.length : end] = key_states
        self._value_buffer[:, :, self.length : end] = value_states
        self.length = end
        self.keys = self._key_buffer[:, :, :end]
        self.values = self._value_buffer[:, :, :end]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        """Tokens held (L)."""
        return self.length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Keeps the rows ``beam_idx`` (B',) in this order (copies the L held positions)."""
        if self._key_buffer is None or self._value_buffer is None:
            return
        index = beam_idx.to(self._key_buffer.device)
        self._key_buffer = self._key_buffer.index_select(0, index)
        self._value_buffer = self._value_buffer.index_select(0, index)
        self.keys = self._key_buffer[:, :, : self.length]
        self.values = self._value_buffer[:, :, : self.length]

    def batch_select_indices(self, indices: Tensor) -> None:
        """Same as :meth:`reorder_cache`."""
        self.reorder_cache(indices)  # type: ignore[arg-type]

    def reset(self) -> None:
        """Drops the buffers."""
        self._key_buffer = self._value_buffer = None
        self.length = 0
        super().reset()


def preallocated_cache(config: PretrainedConfig, capacity: int) -> DynamicCache:
    """A ``DynamicCache`` for ``config`` whose full-attention layers hold ``capacity``
    positions each in preallocated buffers (other layer kinds unchanged)."""
    cache = DynamicCache(config=config)
    cache.layers = [
        PreallocatedLayer(capacity) if type(layer) is DynamicLayer else layer
        for layer in cache.layers
    ]
    return cache


class CacheBudgetError(ValueError):
    """The preallocated KV cache would not fit in the device's free memory."""


def cache_bytes(config: PretrainedConfig, rows: int, capacity: int, dtype: torch.dtype) -> int:
    """Bytes of the keys and values of ``rows`` x ``capacity`` positions in every layer."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    layers = int(getattr(text, "num_hidden_layers", 0) or 0)
    heads = int(getattr(text, "num_attention_heads", 0) or 0)
    kv_heads = int(getattr(text, "num_key_value_heads", None) or heads)
    head_dim = getattr(text, "head_dim", None) or (
        int(getattr(text, "hidden_size", 0) or 0) // max(heads, 1)
    )
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 2 * layers * rows * kv_heads * capacity * int(head_dim) * itemsize


def free_memory(device: torch.device) -> int | None:
    """Free bytes on ``device`` (a CUDA device's, or the host's available memory)."""
    if device.type == "cuda":  # what the driver has free, plus the allocator's spare cache
        spare = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(torch.cuda.mem_get_info(device)[0]) + int(spare)
    if device.type == "cpu":
        try:
            import psutil

            return int(psutil.virtual_memory().available)
        except ImportError:
            pages = os.sysconf("SC_AVPHYS_PAGES") if hasattr(os, "sysconf") else None
            return int(pages * os.sysconf("SC_PAGE_SIZE")) if pages else None
    return None


def check_cache_fits(
    config: PretrainedConfig,
    rows: int,
    prompt: int,
    budget: int,
    dtype: torch.dtype,
    device: torch.device,
) -> None:
    """Raises :class:`CacheBudgetError` when the cache of ``rows`` rows of ``prompt`` +
    ``budget`` positions exceeds the free memory of ``device`` (unknown: not checked)."""
    free = free_memory(device)
    need = cache_bytes(config, rows, prompt + budget, dtype)
    if free is None or need <= free:
        return
    raise CacheBudgetError(
        f"generating {budget} new tokens (rollout.max_new_tokens) after {prompt} prompt "
        f"tokens for {rows} rows needs a {need / 2**30:.1f} GiB KV cache, and {device} has "
        f"{free / 2**30:.1f} GiB free: lower rollout.max_new_tokens (or the rows per "
        "generation: rollout.prompts_per_step x rollout.n_samples_per_prompt)"
    )
