"""Keys of ``PromptRecord.metadata`` that keep what the data row held beside the prompt.

A prompt read from a data file keeps the row as written, so a reward function from another
framework finds the fields it expects there: verl's ``data_source``, ``extra_info`` and
``reward_model.ground_truth``, TRL's dataset columns, the prompt as a string or a chat.
"""

from __future__ import annotations

ROW_COLUMNS_KEY = "columns"
"""The row's columns other than the prompt and its media (a dict, as read)."""

PROMPT_CONTENT_KEY = "prompt_content"
"""The row's prompt before rendering: a string, or a list of chat messages."""
