"""From settings to service parameters: build a frozen parameters dataclass out of the
same-named fields of a config section (or a parsed command line), the translation every
entrypoint does.

:func:`params_from` is the one the run config uses: every field of the dataclass whose name
the section has is copied, so an option declared in a section and in the dataclass under one
name needs no third edit; every other field must be accounted for (given, or named as left at
its default), so nothing is silently left out. :func:`params_over` lays a section's set
(not ``None``) fields over a default parameters object. :func:`copy_fields` copies an explicit
list of names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def source_fields(source: object) -> frozenset[str]:
    """The data fields of ``source``: a pydantic model's fields, a dataclass's fields, else
    its attributes (``argparse.Namespace``, ``SimpleNamespace``); never its methods."""
    model_fields = getattr(type(source), "model_fields", None)
    if isinstance(model_fields, Mapping):
        return frozenset(model_fields)
    if dataclasses.is_dataclass(source):
        return frozenset(f.name for f in dataclasses.fields(source))
    return frozenset(vars(source))


def _fields_of(target: type[Any]) -> tuple[str, ...]:
    if not dataclasses.is_dataclass(target):
        raise TypeError(f"params_from: {target.__name__} is not a dataclass")
    return tuple(f.name for f in dataclasses.fields(target) if f.init)


def params_from(
    target: type[T],
    source: object,
    /,
    *,
    defaults: str = "",
    resolved: Mapping[str, Any] | None = None,
    **given: Any,
) -> T:
    """``target`` (a dataclass) built from ``source``: each of its fields is

    * copied from the field of ``source`` with its name, or
    * ``given`` by keyword (a name ``source`` lacks: renamed or computed), or
    * ``resolved`` (a name ``source`` has, whose value the caller resolves, e.g. ``'sampling'``
      -> a number), or
    * named in the space-separated ``defaults`` (left at the dataclass default).

    A field none of these covers, a given name the source also has (it would hide the copy),
    and a name given twice are refused, so a field is never silently dropped or shadowed.
    """
    where = f"params_from({target.__name__})"
    names = _fields_of(target)
    available = source_fields(source)
    resolved = dict(resolved or {})
    kept = set(defaults.split())
    for label, chosen in (("given", given), ("resolved", resolved), ("defaults", kept)):
        unknown = sorted(set(chosen) - set(names))
        if unknown:
            raise ValueError(f"{where}: {label} {unknown} are not fields of {target.__name__}")
    shadowed = sorted(given.keys() & available)
    if shadowed:
        raise ValueError(
            f"{where}: {shadowed} both copied from the source and given; pass a value derived "
            "from the source's field as resolved="
        )
    not_in_source = sorted(resolved.keys() - available)
    if not_in_source:
        raise ValueError(f"{where}: resolved {not_in_source} are not fields of the source")
    twice = sorted(kept & (given.keys() | resolved.keys()))
    if twice:
        raise ValueError(f"{where}: {twice} both left at their default and given")
    copied = {
        name: getattr(source, name)
        for name in names
        if name in available and name not in kept and name not in resolved
    }
    covered = copied.keys() | given.keys() | resolved.keys() | kept
    missing = [name for name in names if name not in covered]
    if missing:
        raise ValueError(
            f"{where}: {missing} are neither fields of the source nor given (name the ones "
            "left at their default in defaults=)"
        )
    return target(**copied, **resolved, **given)


def params_over(base: T, source: object, **resolved: Any) -> T:
    """``base`` (a dataclass instance) with each same-named field that ``source`` sets (not
    ``None``) laid over it; ``resolved`` are such fields whose value the caller derived (also
    skipped when ``None``). ``None`` keeps ``base``'s value: the config's "the default"."""
    names = _fields_of(type(base))
    available = source_fields(source)
    unknown = sorted(resolved.keys() - (set(names) & available))
    if unknown:
        raise ValueError(
            f"params_over({type(base).__name__}): resolved {unknown} are not fields of both"
        )
    values = {name: getattr(source, name) for name in names if name in available}
    values.update(resolved)
    laid: T = dataclasses.replace(  # type: ignore[type-var]  # T is a dataclass (checked)
        base, **{k: v for k, v in values.items() if v is not None}
    )
    return laid


def copy_fields(target: Callable[..., T], source: object, names: str, **values: Any) -> T:
    """``target(**values)`` plus, for each name of the space-separated ``names``, the
    attribute of ``source`` with that name (``values`` are the fields named otherwise)."""
    copied = {name: getattr(source, name) for name in names.split()}
    clash = copied.keys() & values.keys()
    if clash:
        raise ValueError(f"copy_fields: {sorted(clash)} both copied and given")
    return target(**copied, **values)
