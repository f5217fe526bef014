"""Input validation for domain functions.

Every check raises ``ValueError`` with a message that names the argument, what was
expected and what was given, so a user sees the problem instead of a silent broadcast.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from lightrft.domain.scalar_checks import check_non_negative as check_non_negative
from lightrft.domain.scalar_checks import check_positive as check_positive


def check_shape(name: str, tensor: Tensor, expected: Sequence[int | None]) -> None:
    """Checks ``tensor.shape`` against ``expected`` (``None`` matches any size)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    shape = tuple(tensor.shape)
    ok = len(shape) == len(expected) and all(
        e is None or e == s for s, e in zip(shape, expected, strict=False)
    )
    if not ok:
        want = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
        raise ValueError(f"{name} must have shape {want}, got {shape}")


def check_same_shape(reference_name: str, reference: Tensor, **others: Tensor | None) -> None:
    """Checks that every tensor in ``others`` (``None`` skipped) has ``reference``'s shape."""
    for name, tensor in others.items():
        if tensor is None:
            continue
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
        if tensor.shape != reference.shape:
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)} but {reference_name} has shape "
                f"{tuple(reference.shape)}; they must match"
            )


def check_token_tensor(
    name: str, tensor: Tensor, response_mask: Tensor, **others: Tensor | None
) -> None:
    """A per-token tensor: ``tensor`` is (B, T), ``others`` (then ``response_mask``) have its
    shape, and ``response_mask`` is a mask selecting at least one token."""
    check_shape(name, tensor, (None, None))
    check_same_shape(name, tensor, **others, response_mask=response_mask)
    check_mask("response_mask", response_mask)


def check_finite(name: str, tensor: Tensor) -> None:
    """Refuses NaN and +-inf values, naming the first bad position."""
    bad = ~torch.isfinite(tensor)
    if bool(bad.any()):
        position = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name} contains a non-finite value ({tensor[position].item()}) at index {position}"
        )


def check_mask(name: str, mask: Tensor, *, allow_empty: bool = False) -> None:
    """A mask holds only 0/1 (or bools) and, unless allowed, at least one 1."""
    if mask.dtype != torch.bool and bool(((mask != 0) & (mask != 1)).any()):
        raise ValueError(f"{name} must contain only 0 and 1 (True where the token counts)")
    if not allow_empty and not bool(mask.any()):
        raise ValueError(f"{name} selects no token (all zeros); nothing to compute")
