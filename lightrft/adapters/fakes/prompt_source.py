"""``FakePromptSource``: the ``PromptSource`` port over an in-memory list of records."""

from __future__ import annotations

from collections.abc import Iterable

from lightrft.domain.types import PromptRecord


class FakePromptSource:
    """Random access to a fixed list of :class:`PromptRecord`; records every index read."""

    def __init__(self, records: Iterable[PromptRecord]) -> None:
        self._records = tuple(records)
        self.reads: list[int] = []

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> PromptRecord:
        """Prompt number ``index`` (0 <= index < len); anything else raises ``IndexError``."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"prompt index must be an int, got {type(index).__name__}")
        if not 0 <= index < len(self._records):
            raise IndexError(f"prompt index {index} out of range [0, {len(self._records)})")
        self.reads.append(index)
        return self._records[index]
