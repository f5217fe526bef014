"""copy_fields: same-named attributes plus the fields given, and a clash is refused;
params_from: every same-named field copied, every other one accounted for; params_over: the
set fields laid over a base."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from lightrft.entrypoints.field_copy import copy_fields, params_from, params_over


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


@dataclass(frozen=True)
class _Sampling:
    n: int
    temperature: float = 1.0
    top_k: int = 0
    stop: tuple[str, ...] = ()


def test_params_from_copies_every_same_named_field() -> None:
    source = SimpleNamespace(temperature=0.5, top_k=9, samples=3, unrelated="x")
    params = params_from(_Sampling, source, defaults="stop", n=source.samples)
    assert params == _Sampling(n=3, temperature=0.5, top_k=9, stop=())


def test_params_from_reads_a_pydantic_models_fields_not_its_methods() -> None:
    class Section(BaseModel):
        temperature: float = 0.25
        top_k: int = 4

        def stop(self) -> tuple[str, ...]:  # a method is not a field: not copied
            return ("never",)

    assert params_from(_Sampling, Section(), defaults="stop", n=1) == _Sampling(1, 0.25, 4, ())


def test_params_from_refuses_a_field_left_out() -> None:
    with pytest.raises(ValueError, match=r"\['n', 'stop'\] are neither fields of the source"):
        params_from(_Sampling, SimpleNamespace(temperature=0.5, top_k=1))


def test_params_from_refuses_a_given_name_the_source_has() -> None:
    with pytest.raises(ValueError, match=r"\['top_k'\] both copied from the source and given"):
        params_from(_Sampling, SimpleNamespace(temperature=0.5, top_k=1), n=1, stop=(), top_k=2)


def test_params_from_takes_a_resolved_value_for_a_source_field() -> None:
    source = SimpleNamespace(temperature="sampling", top_k=1, stop=["a"])
    params = params_from(
        _Sampling, source, resolved={"temperature": 0.7, "stop": tuple(source.stop)}, n=2
    )
    assert params == _Sampling(n=2, temperature=0.7, top_k=1, stop=("a",))
    with pytest.raises(ValueError, match=r"resolved \['n'\] are not fields of the source"):
        params_from(_Sampling, source, resolved={"n": 2, "temperature": 0.7, "stop": ()})


def test_params_from_refuses_names_left_at_default_and_given() -> None:
    with pytest.raises(ValueError, match=r"\['stop'\] both left at their default and given"):
        params_from(
            _Sampling, SimpleNamespace(temperature=0.5, top_k=1), defaults="stop", n=1, stop=()
        )
    with pytest.raises(ValueError, match=r"defaults \['stops'\] are not fields of _Sampling"):
        params_from(_Sampling, SimpleNamespace(temperature=0.5, top_k=1), defaults="stops", n=1)


def test_params_over_lays_the_set_fields_over_the_base() -> None:
    base = _Sampling(n=4, temperature=0.9, top_k=5)
    source = SimpleNamespace(temperature=None, top_k=2, unrelated=1)
    assert params_over(base, source) == _Sampling(n=4, temperature=0.9, top_k=2)
    assert params_over(base, source, temperature=0.3) == _Sampling(n=4, temperature=0.3, top_k=2)
    assert params_over(base, source, temperature=None) == _Sampling(n=4, temperature=0.9, top_k=2)
