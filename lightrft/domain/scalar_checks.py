"""Checks of scalar parameters (torch-free, so plain parameter objects can use them without
importing torch)."""

from __future__ import annotations


def check_positive(name: str, value: float) -> None:
    """Refuses zero, negative and non-finite numbers."""
    if not (value > 0 and value != float("inf")):
        raise ValueError(f"{name} must be a positive finite number, got {value}")


def check_non_negative(name: str, value: float) -> None:
    """Refuses negative and non-finite numbers."""
    if not (value >= 0 and value != float("inf")):
        raise ValueError(f"{name} must be a non-negative finite number, got {value}")
