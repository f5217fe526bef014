"""Reward functions for PythonFunctionReward tests, imported by the worker process."""

from __future__ import annotations

import os
import time


def length_ratio(prompt: str, response: str, reference: str | None) -> float:
    """len(response) / 10, or 1.0 when the response equals the reference."""
    if reference is not None and response == reference:
        return 1.0
    return len(response) / 10


def hang_on_request(prompt: str, response: str, reference: str | None) -> float:
    """Sleeps (far past any test timeout) when the response is "hang", else returns 0.5."""
    if response == "hang":
        time.sleep(600)
    return 0.5


def raise_on_request(prompt: str, response: str, reference: str | None) -> float:
    """Raises when the response is "raise", else returns 0.25."""
    if response == "raise":
        raise RuntimeError("reward function blew up")
    return 0.25


def exit_on_request(prompt: str, response: str, reference: str | None) -> float:
    """Kills its own process when the response is "die", else returns 0.75."""
    if response == "die":
        os._exit(3)
    return 0.75


def noisy(prompt: str, response: str, reference: str | None) -> float:
    """Prints to stdout (must not disturb the worker protocol) and returns 2.0."""
    print("debugging output from a reward function")
    return 2.0


def not_a_number(prompt: str, response: str, reference: str | None) -> object:
    """Returns a string or NaN instead of a float."""
    return float("nan") if response == "nan" else "high"


def process_id(prompt: str, response: str, reference: str | None) -> float:
    """The worker's process id, to check that the worker is reused."""
    return float(os.getpid())


NOT_CALLABLE = 3
