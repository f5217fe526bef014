"""``copy_fields``: build a parameters object from the same-named fields of a config section
or parsed command line, the translation every entrypoint does from settings to services.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def copy_fields(target: Callable[..., T], source: object, names: str, **values: Any) -> T:
    """``target(**values)`` plus, for each name of the space-separated ``names``, the
    attribute of ``source`` with that name (``values`` are the fields named otherwise)."""
    copied = {name: getattr(source, name) for name in names.split()}
    clash = copied.keys() & values.keys()
    if clash:
        raise ValueError(f"copy_fields: {sorted(clash)} both copied and given")
    return target(**copied, **values)
