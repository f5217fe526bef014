"""Contract of the ``PromptSource`` port. Append real sources to ``IMPLEMENTATIONS``.

A factory takes an empty directory it may write to (data files, caches) and returns the
source.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lightrft.adapters.datasets import HfPromptDataset, InMemoryPromptSource, arithmetic_prompts
from lightrft.adapters.fakes import synthetic_prompts
from lightrft.domain.ports import PromptSource
from lightrft.domain.types import PromptRecord
from tests.contract.real_adapters import PROMPT_ROWS, tiny_tokenizer


def make_fake_source(_directory: Path) -> PromptSource:
    return synthetic_prompts(7, seed=0)


def make_in_memory_source(_directory: Path) -> PromptSource:
    return InMemoryPromptSource(PROMPT_ROWS, tiny_tokenizer())


def make_arithmetic_source(_directory: Path) -> PromptSource:
    return arithmetic_prompts(8, tokenizer=tiny_tokenizer())


def make_jsonl_dataset(directory: Path) -> PromptSource:
    path = directory / "prompts.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in PROMPT_ROWS), encoding="utf-8")
    return HfPromptDataset(path, tiny_tokenizer(), cache_dir=directory / "cache")


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_source, id="fake"),
    pytest.param(make_in_memory_source, id="in-memory"),
    pytest.param(make_arithmetic_source, id="arithmetic"),
    pytest.param(make_jsonl_dataset, id="hf-jsonl"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def source(request: pytest.FixtureRequest, tmp_path: Path) -> PromptSource:
    factory: Callable[[Path], PromptSource] = request.param
    return factory(tmp_path)


def test_random_access_records(source: PromptSource) -> None:
    assert isinstance(source, PromptSource)
    assert len(source) > 0
    records = [source[i] for i in range(len(source))]
    assert all(isinstance(r, PromptRecord) and r.prompt_token_ids for r in records)
    assert [source[i] for i in reversed(range(len(source)))] == records[::-1]  # stable
    assert len({r.uid for r in records}) == len(records)


def test_index_past_the_end_raises(source: PromptSource) -> None:
    with pytest.raises(IndexError):
        source[len(source)]
