"""Reward functions for tests (referenced as `tests.helpers.toy_rewards:NAME`)."""

from __future__ import annotations


def vowel_fraction(prompt: str, response: str, reference: str | None) -> float:
    """Share of vowels in the response: varies between samples of a random tiny model."""
    return sum(ch in "aeiou" for ch in response) / max(1, len(response))


def text_checksum(prompt: str, response: str, reference: str | None) -> float:
    """A deterministic score in [0, 1] that differs between almost any two responses."""
    return (sum(map(ord, response)) % 97) / 96


def always_raises(prompt: str, response: str, reference: str | None) -> float:
    """A broken reward function: fails on every sample."""
    raise RuntimeError("this reward function is broken")


def returns_nan(prompt: str, response: str, reference: str | None) -> float:
    """A reward function whose every value is unusable."""
    return float("nan")


def returns_huge(prompt: str, response: str, reference: str | None) -> int:
    """A reward function whose values overflow a float (and are too long to print)."""
    return 10**400 if len(response) % 2 else 10**5000
