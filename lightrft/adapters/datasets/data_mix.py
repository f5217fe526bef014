"""Several prompt sources read as one: one after another, or mixed by probability.

``mix_prompt_sources`` names each source's prompts after its dataset (uid ``<name>:<uid>``,
``metadata["dataset"]``), then concatenates them in order, or, given probabilities, blends
them with :class:`~lightrft.adapters.datasets.blended.BlendedPromptSource` (seeded). The
result's ``stats`` add up the sources' :class:`~lightrft.adapters.datasets.DatasetStats`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import fields, replace
from itertools import accumulate

from lightrft.adapters.datasets.blended import BlendedPromptSource
from lightrft.adapters.datasets.prompt_rows import DatasetStats, check_index
from lightrft.domain.ports import PromptSource
from lightrft.domain.types import PromptRecord


class NamedPromptSource:
    """``source`` with its prompts' uids prefixed by ``name`` and ``metadata["dataset"]``."""

    def __init__(self, source: PromptSource, name: str) -> None:
        self.source, self.name = source, name

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index: int) -> PromptRecord:
        record = self.source[index]
        metadata = {**record.metadata, "dataset": self.name}
        return replace(record, uid=f"{self.name}:{record.uid}", metadata=metadata)

    @property
    def stats(self) -> DatasetStats:
        """The source's stats."""
        return summed_stats([self.source])


class ConcatenatedPromptSource:
    """The prompts of ``sources``, one source after another."""

    def __init__(self, sources: Sequence[PromptSource]) -> None:
        if not sources:
            raise ValueError("need at least one prompt source")
        self.sources = list(sources)
        self._ends = list(accumulate(len(s) for s in self.sources))

    def __len__(self) -> int:
        return self._ends[-1]

    def __getitem__(self, index: int) -> PromptRecord:
        index = check_index(index, len(self))
        part = bisect.bisect_right(self._ends, index)
        start = self._ends[part - 1] if part else 0
        return self.sources[part][index - start]

    @property
    def stats(self) -> DatasetStats:
        """The sources' stats added up."""
        return summed_stats(self.sources)


class _Blend(BlendedPromptSource):
    @property
    def stats(self) -> DatasetStats:
        return summed_stats(self.sources)


def summed_stats(sources: Sequence[PromptSource]) -> DatasetStats:
    """Field-wise sum of the sources' ``stats`` (a source that keeps none counts its
    prompts as rows read and kept)."""
    parts = [_stats_of(s) for s in sources]
    names = [f.name for f in fields(DatasetStats)]
    return DatasetStats(**{n: sum(getattr(p, n) for p in parts) for n in names})


def _stats_of(source: PromptSource) -> DatasetStats:
    stats = getattr(source, "stats", None)
    return stats if isinstance(stats, DatasetStats) else DatasetStats(len(source), len(source))


def mix_prompt_sources(
    sources: Sequence[PromptSource],
    names: Sequence[str | None],
    probabilities: Sequence[float] | None = None,
    seed: int = 0,
) -> PromptSource:
    """One source of ``sources`` (see the module docstring); a single unnamed source without
    probabilities is returned as it is."""
    if len(names) != len(sources):
        raise ValueError(f"need one name per source, got {len(names)} for {len(sources)}")
    if probabilities is not None and len(probabilities) != len(sources):
        raise ValueError(
            f"need one probability per dataset, got {len(probabilities)} for {len(sources)}"
        )
    named = [
        s if n is None else NamedPromptSource(s, n) for s, n in zip(sources, names, strict=True)
    ]
    if probabilities is not None and len(named) > 1:
        return _Blend(named, probabilities, seed=seed)
    if len(named) == 1:
        return named[0]
    return ConcatenatedPromptSource(named)
