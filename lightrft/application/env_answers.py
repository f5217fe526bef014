"""What an environment answers, checked as untrusted input.

An environment (a service over HTTP, a user's class) may answer anything: token ids the
model has no embedding for, an observation of megabytes, a reward of ``1e308`` or ``nan``,
thousands of counter names. None of that may end the run, and none may reach the engine,
the trainer or the metrics. Each check here returns what is wrong (one line naming the
answer and the limit) or ``None``; the rollout then ends the episode with a named end
reason, counts it and goes on:

- ``env_invalid``: the first input is not a ``PromptRecord``, its ids are empty, outside
  ``[0, vocab_size)``, or add more than ``max_observation_tokens`` to the prompt; a step
  answer is not a ``StepOutcome`` (with a bool ``done`` and ``ChatMessage`` observations), its reward is not finite or larger in size than
  ``max_abs_reward``, a counter is not a finite number, or the episode's counters would
  have more than ``max_counter_keys`` names;
- ``observation_too_long``: an observation whose messages hold more than
  ``CHARS_PER_TOKEN * max_observation_tokens`` characters (refused before it is rendered),
  or that renders to more than ``max_observation_tokens`` tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lightrft.domain.agent import ChatMessage, StepOutcome
from lightrft.domain.types import PromptRecord

CHARS_PER_TOKEN = 32
"""Characters an observation may hold per token of ``max_observation_tokens`` (checked
before rendering, so an observation of megabytes is never tokenised)."""


def first_input_problem(
    value: object, prompt: PromptRecord, vocab_size: int | None, max_extra_tokens: int
) -> str | None:
    """What is wrong with a reset answer for ``prompt``, or ``None``."""
    if not isinstance(value, PromptRecord):
        return f"reset returned {type(value).__name__}, not a PromptRecord (the first input)"
    ids = value.prompt_token_ids
    if not ids:
        return "reset returned no prompt token ids"
    limit = len(prompt.prompt_token_ids) + max_extra_tokens
    if len(ids) > limit:
        return (
            f"reset returned {len(ids)} prompt token ids, more than the prompt's "
            f"{len(prompt.prompt_token_ids)} plus rollout.agent.max_observation_tokens="
            f"{max_extra_tokens}"
        )
    return ids_problem(ids, vocab_size, "reset")


def ids_problem(ids: Sequence[int], vocab_size: int | None, what: str) -> str | None:
    """Whether every id is an int in ``[0, vocab_size)`` (any int >= 0 without a size)."""
    for position, token in enumerate(ids):
        if not isinstance(token, int) or isinstance(token, bool):
            return f"{what} returned a token id that is not an int at position {position}"
        if token < 0 or (vocab_size is not None and token >= vocab_size):
            size = "" if vocab_size is None else f" (the vocabulary has {vocab_size})"
            return f"{what} returned token id {token} at position {position}{size}"
    return None


def outcome_problem(
    value: object, known_keys: set[str], max_abs_reward: float, max_counter_keys: int
) -> str | None:
    """What is wrong with a step answer, or ``None``; ``known_keys`` are the counter names
    of the episode so far."""
    if not isinstance(value, StepOutcome):
        return f"step returned {type(value).__name__}, not a StepOutcome"
    if not isinstance(value.done, bool):
        return f"step returned done={value.done!r}, not a bool"
    messages = value.observation
    if not isinstance(messages, tuple | list) or not all(
        isinstance(m, ChatMessage) and isinstance(m.content, str) and isinstance(m.role, str)
        for m in messages
    ):
        return "step returned an observation that is not a sequence of ChatMessage"
    reward = value.reward
    if not isinstance(reward, int | float) or isinstance(reward, bool):
        return f"step returned a reward that is not a number: {reward!r}"
    if not math.isfinite(reward) or abs(reward) > max_abs_reward:
        return (
            f"step returned reward {reward!r}: not finite, or larger in size than "
            f"rollout.agent.max_abs_reward={max_abs_reward:g}"
        )
    return counters_problem(value.counters, known_keys, max_counter_keys)


def counters_problem(
    counters: Mapping[str, float], known_keys: set[str], max_counter_keys: int
) -> str | None:
    """Counters must be finite numbers, with at most ``max_counter_keys`` names in all."""
    names = len(known_keys | set(counters))
    if names > max_counter_keys:
        return (
            f"step returned counters that make {names} names in the episode, more than "
            f"rollout.agent.max_counter_keys={max_counter_keys}"
        )
    for key, number in counters.items():
        if (
            not isinstance(number, int | float)
            or isinstance(number, bool)
            or not math.isfinite(number)
        ):
            return f"step returned counter {str(key)[:80]!r} = {number!r}, not a finite number"
    return None


def observation_chars_problem(outcome: StepOutcome, max_tokens: int) -> str | None:
    """Whether the observation's text is too long to be worth rendering."""
    chars = sum(len(m.content) for m in outcome.observation)
    if chars > CHARS_PER_TOKEN * max_tokens:
        return (
            f"observation of {chars} characters, more than {CHARS_PER_TOKEN} x "
            f"rollout.agent.max_observation_tokens={max_tokens}"
        )
    return None
