"""``InMemoryPromptSource``: the ``PromptSource`` port over a list of row dicts.

Same reading, rendering and tokenization as :class:`HfPromptDataset` (see
:mod:`prompt_rows`), for rows built in code: synthetic tasks, tests, another platform's data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.adapters.datasets.prepared_source import PreparedPromptSource
from lightrft.adapters.datasets.prompt_rows import (
    PreparedPrompt,
    RowRef,
    RowSpec,
    prepare_prompts,
)
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer


class InMemoryPromptSource(PreparedPromptSource):
    """Prompt records from ``rows``; ``uid`` is ``"<name>:<row>"``, ``stats`` as for files."""

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        tokenizer: Any,
        *,
        spec: RowSpec | None = None,
        prompt_format: PromptFormat | None = None,
        name: str = "memory",
    ) -> None:
        self.spec = spec or RowSpec()
        self.renderer = PromptRenderer(tokenizer, prompt_format)
        self.name = name
        self._rows = list(rows)
        refs = (
            RowRef(uid=f"{name}:{i}", where=f"{name} row {i}", row=row, position=i)
            for i, row in enumerate(self._rows)
        )
        self._prepared, self.stats = prepare_prompts(refs, self.renderer, self.spec, name)
        if not self._prepared:
            raise ValueError(f"no usable prompts in {name}: {self.stats}")

    def _media_ref(self, prepared: PreparedPrompt) -> RowRef:
        row = self._rows[prepared.position]
        return RowRef(prepared.record.uid, prepared.record.metadata["where"], row)
