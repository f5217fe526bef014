"""Checks that a checkpoint state loads back with ``torch.load(..., weights_only=True)``.

``weights_only`` loading refuses every object that is not a tensor, a plain Python value or
a plain container, so a state holding, say, a NumPy scalar would save without complaint and
then be unloadable. :func:`check_weights_only_safe` walks the state before anything is
written and names the key path of the first offending value.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch
from torch import Tensor, nn

# Exact types (not subclasses: ``numpy.float64`` is a ``float`` subclass that
# ``weights_only`` refuses, as are ``IntEnum`` members and ``defaultdict``).
_LEAF_TYPES: frozenset[type] = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        torch.Size,
        torch.dtype,
        torch.device,
        Tensor,
        nn.Parameter,
    }
)
_MAPPING_TYPES: frozenset[type] = frozenset({dict, OrderedDict})
_SEQUENCE_TYPES: frozenset[type] = frozenset({list, tuple, set})


class UnsafeCheckpointStateError(TypeError):
    """A checkpoint state holds a value that ``torch.load(weights_only=True)`` refuses."""


def check_weights_only_safe(state: Any, path: str = "state") -> None:
    """Raises :class:`UnsafeCheckpointStateError` naming the first refused value's key path.

    Accepted: tensors and ``nn.Parameter`` (exact types, any dtype/layout), ``None``,
    ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, ``torch.Size``,
    ``torch.dtype``, ``torch.device``, and ``dict`` / ``OrderedDict`` / ``list`` / ``tuple``
    / ``set`` of those (mapping keys included). The path reads like Python indexing, e.g.
    ``state['policy_strategy']['optimizer']['state'][0]['exp_avg']``.
    """
    stack: list[tuple[str, Any]] = [(path, state)]
    while stack:
        where, value = stack.pop()
        kind = type(value)
        if kind in _LEAF_TYPES:
            continue
        if kind in _MAPPING_TYPES:
            for key in value:
                check_weights_only_safe(key, f"{where} (key {key!r})")
            children = [(f"{where}[{key!r}]", item) for key, item in value.items()]
        elif kind in _SEQUENCE_TYPES:
            items = sorted(value, key=repr) if kind is set else value
            children = [(f"{where}[{i}]", item) for i, item in enumerate(items)]
        else:
            raise UnsafeCheckpointStateError(
                f"checkpoint state at {where} holds a {kind.__module__}.{kind.__qualname__}, "
                "which torch.load(weights_only=True) refuses; store only tensors, None, "
                "bool, int, float, complex, str, bytes, torch.Size/dtype/device and "
                "dict/list/tuple/set of them (convert objects to their state_dict(), NumPy "
                "values with .item() or torch.from_numpy)"
            )
        stack.extend(reversed(children))  # depth-first, in insertion order
