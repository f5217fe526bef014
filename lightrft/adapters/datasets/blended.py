"""``BlendedPromptSource``: several prompt sources mixed with given probabilities.

Position ``i`` of the blend draws its source from a seeded categorical distribution (the
whole sequence of draws is fixed by ``seed``), and takes that source's next prompt in a
seeded per-epoch shuffle of it (or in order with ``shuffle=False``); a source that runs out
starts a new epoch. Proportions therefore hold in expectation, the exact sequence is
reproducible, and random access stays O(1) after construction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from lightrft.adapters.datasets.prompt_rows import check_index
from lightrft.domain.ports import PromptSource
from lightrft.domain.types import PromptRecord


class BlendedPromptSource:
    """``PromptSource`` over ``sources`` blended with ``weights`` (normalized to sum to 1).

    ``length`` defaults to the sum of the sources' lengths. Each record's ``metadata`` gains
    ``blend_source``, the index of the source it came from.
    """

    def __init__(
        self,
        sources: Sequence[PromptSource],
        weights: Sequence[float],
        *,
        length: int | None = None,
        seed: int = 0,
        shuffle: bool = True,
    ) -> None:
        if not sources or len(sources) != len(weights):
            raise ValueError(
                f"need one weight per source, got {len(sources)} sources, {len(weights)} weights"
            )
        if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError(f"weights must be finite, >= 0 and not all 0, got {list(weights)}")
        if any(len(source) == 0 for source in sources):
            raise ValueError("every blended source must hold at least one prompt")
        self.sources = list(sources)
        self.probabilities = np.asarray(weights, dtype=np.float64) / float(sum(weights))
        self.length = sum(len(s) for s in sources) if length is None else length
        if self.length < 1:
            raise ValueError(f"length must be >= 1, got {self.length}")
        self.seed = seed
        self.shuffle = shuffle
        rng = np.random.default_rng(seed)
        self.source_of = rng.choice(len(sources), size=self.length, p=self.probabilities)
        self._ordinal = np.zeros(self.length, dtype=np.int64)  # draws of that source before i
        for s in range(len(sources)):
            positions = np.flatnonzero(self.source_of == s)
            self._ordinal[positions] = np.arange(len(positions))
        self._orders: dict[tuple[int, int], np.ndarray] = {}

    def __len__(self) -> int:
        return self.length

    def _item(self, source: int, ordinal: int) -> int:
        size = len(self.sources[source])
        epoch, offset = divmod(ordinal, size)
        if not self.shuffle:
            return offset
        key = (source, epoch)
        if key not in self._orders:
            self._orders[key] = np.random.default_rng([self.seed, source, epoch]).permutation(size)
        return int(self._orders[key][offset])

    def position(self, index: int) -> tuple[int, int]:
        """(source, item in that source) of position ``index`` of the blend (negative
        indices count from the end); the sources may hold any items, not only prompts."""
        index = check_index(index, self.length)
        source = int(self.source_of[index])
        return source, self._item(source, int(self._ordinal[index]))

    def __getitem__(self, index: int) -> PromptRecord:
        """Prompt number ``index`` of the blend (negative indices count from the end)."""
        source, item = self.position(index)
        record = self.sources[source][item]
        return replace(record, metadata={**record.metadata, "blend_source": source})
