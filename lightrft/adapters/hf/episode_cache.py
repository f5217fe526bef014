"""Episode KV caches: an episode's keys and values kept between its turns (HF engine).

Shape letters: H key/value heads, L tokens held, D head dim, N rows, W the batch's width.

A multi-turn episode's next input is its previous input + the turn's ids + the observation's
ids (:mod:`lightrft.application.episode_state`). When a turn stops, the engine keeps the
row's keys and values of every position it has computed (the input and every generated
token but the last, which was sampled and never fed) under the episode's handle, with the
ids they encode and the engine's weight version. The episode's next turn then prefills only
what follows those ids (the last generated token and the observation) on top of them.

A held cache is used only when its ids are a strict prefix of the new input *and* it was
computed with the engine's current weights (the engine clears the store at every weight
load and sleep and bumps its version, so a stale cache cannot be read). The store holds at
most ``capacity`` episodes; the least recently used one is evicted beyond that (counted).
The multi-turn rollout releases its episodes' handles when the rollout ends.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor
from transformers import DynamicCache

from lightrft.domain.token_continuity import continues

LayerKv = tuple[Tensor, Tensor]  # (H, L, D) keys and values of one layer, one row


@dataclass(frozen=True)
class HeldCache:
    """One episode's keys and values (per layer) for the positions of ``ids``."""

    ids: tuple[int, ...]
    layers: tuple[LayerKv, ...]
    version: int


@dataclass
class EpisodeCacheStats:
    """What the store did since it was built: lookups that found a usable cache (``hits``)
    or not (``misses``), prompt tokens prefilled (``prefill_tokens``) and read from held
    caches instead (``reused_tokens``), caches ``evicted`` for the cap and ``released``."""

    hits: int = 0
    misses: int = 0
    stale: int = 0  # held caches refused for an older weight version
    prefill_tokens: int = 0
    reused_tokens: int = 0
    evicted: int = 0
    released: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return dict(vars(self))


@dataclass
class EpisodeKvStore:
    """Held episode caches by handle, least recently used first (see the module doc)."""

    capacity: int
    stats: EpisodeCacheStats = field(default_factory=EpisodeCacheStats)
    _held: OrderedDict[str, HeldCache] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"the episode cache capacity must be >= 1, got {self.capacity}")

    def __len__(self) -> int:
        return len(self._held)

    def lookup(self, handle: str, ids: Sequence[int], version: int) -> HeldCache | None:
        """The cache held for ``handle`` when it covers a strict prefix of ``ids`` and was
        computed at weight ``version``; ``None`` otherwise (counted as a miss)."""
        held = self._held.get(handle)
        if held is not None and held.version != version:
            self.stats.stale += 1
            del self._held[handle]
            held = None
        if held is None or len(held.ids) >= len(ids) or not continues(held.ids, ids):
            self.stats.misses += 1
            return None
        self._held.move_to_end(handle)
        self.stats.hits += 1
        return held

    def keep(self, handle: str, held: HeldCache) -> None:
        """Holds ``held`` for ``handle`` (replacing its earlier cache), evicting the least
        recently used episodes beyond the capacity."""
        self._held[handle] = held
        self._held.move_to_end(handle)
        while len(self._held) > self.capacity:
            self._held.popitem(last=False)
            self.stats.evicted += 1

    def release(self, handles: Iterable[str]) -> None:
        """Drops the caches of ``handles`` (the episodes ended)."""
        for handle in handles:
            if self._held.pop(handle, None) is not None:
                self.stats.released += 1

    def clear(self) -> None:
        """Drops every held cache (a weight load or sleep)."""
        self.stats.released += len(self._held)
        self._held.clear()


def row_cache(held: HeldCache, config: object) -> DynamicCache:
    """A one-row cache holding ``held``'s keys and values, to prefill on top of."""
    cache = DynamicCache(config=config)
    for index, (keys, values) in enumerate(held.layers):
        cache.update(keys[None], values[None], index)
    return cache


def row_layers(cache: DynamicCache, row: int, start: int, end: int) -> tuple[LayerKv, ...]:
    """Copies of row ``row``'s keys and values at positions [start, end) of every layer."""
    return tuple(
        (layer.keys[row, :, start:end].clone(), layer.values[row, :, start:end].clone())
        for layer in cache.layers
    )


def fill_left_padded(cache: DynamicCache, rows: Sequence[Sequence[LayerKv]], width: int) -> None:
    """Writes each row's per-layer (H, L_i, D) keys and values into ``cache`` (empty), right
    aligned in a (N, H, ``width``, D) block, the positions before them zero (masked out)."""
    for index, layer in enumerate(cache.layers):
        first_keys, first_values = rows[0][index]
        heads, dim, vdim = first_keys.shape[0], first_keys.shape[-1], first_values.shape[-1]
        keys = first_keys.new_zeros((len(rows), heads, width, dim))
        values = first_values.new_zeros((len(rows), heads, width, vdim))
        for i, row in enumerate(rows):
            k, v = row[index]
            keys[i, :, width - k.shape[1] :] = k
            values[i, :, width - v.shape[1] :] = v
        layer.update(keys, values)


def suffix_positions(held: int, total: int, device: torch.device) -> Tensor:
    """Position ids (1, total - held) of the tokens after ``held`` cached ones."""
    return torch.arange(held, total, device=device)[None]
