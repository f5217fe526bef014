"""Contract of the ``PromptSource`` port. Append real sources to ``IMPLEMENTATIONS``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lightrft.adapters.fakes import synthetic_prompts
from lightrft.domain.ports import PromptSource
from lightrft.domain.types import PromptRecord


def make_fake_source() -> PromptSource:
    return synthetic_prompts(7, seed=0)


IMPLEMENTATIONS: list[object] = [pytest.param(make_fake_source, id="fake")]


@pytest.fixture(params=IMPLEMENTATIONS)
def source(request: pytest.FixtureRequest) -> PromptSource:
    factory: Callable[[], PromptSource] = request.param
    return factory()


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
