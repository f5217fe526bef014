"""``PreparedPromptSource``: indexing shared by the prompt sources over prepared rows.

A source prepares its rows once (:func:`prompt_rows.prepare_prompts`); text records are
returned as prepared, while media are read again on each access from the row the source
keeps, so images and audio are never held decoded for the whole dataset.
"""

from __future__ import annotations

from dataclasses import replace

from lightrft.adapters.datasets.prompt_rows import (
    PreparedPrompt,
    RowRef,
    RowSpec,
    check_index,
    multimodal_of,
)
from lightrft.domain.types import PromptRecord


class PreparedPromptSource:
    """Length and indexing over ``_prepared``; subclasses say where a row's media live."""

    spec: RowSpec
    _prepared: list[PreparedPrompt]

    def _media_ref(self, prepared: PreparedPrompt) -> RowRef:
        """The row behind ``prepared``, to read its media from."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._prepared)

    def __getitem__(self, index: int) -> PromptRecord:
        """Prompt number ``index`` (negative indices count from the end)."""
        prepared = self._prepared[check_index(index, len(self._prepared))]
        if not (self.spec.has_media or prepared.media_in_chat):
            return prepared.record
        return replace(
            prepared.record, multimodal=multimodal_of(self._media_ref(prepared), self.spec)
        )
