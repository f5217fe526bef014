"""copy_fields: same-named attributes plus the fields given, and a clash is refused."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

import pytest

from lightrft.entrypoints.field_copy import copy_fields


@dataclass(frozen=True)
class _Params:
    path: str
    lr: float
    steps: int
    seed: int = 0


def test_copies_the_named_attributes_and_adds_the_given_fields() -> None:
    source = SimpleNamespace(lr=0.5, steps=3, seed=9, unrelated="x")
    params = copy_fields(partial(_Params, "p"), source, "lr steps", seed=1)
    # lr, steps from source; seed given (source's 9 not copied); "unrelated" not named
    assert params == _Params("p", 0.5, 3, 1)


def test_a_name_both_copied_and_given_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\['lr'\] both copied and given"):
        copy_fields(_Params, SimpleNamespace(lr=0.5, steps=3), "lr steps", lr=1.0, path="p")


def test_a_name_the_source_lacks_is_an_error() -> None:
    with pytest.raises(AttributeError, match="steps"):
        copy_fields(_Params, SimpleNamespace(lr=0.5), "lr steps", path="p")
