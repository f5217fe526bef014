"""A synthetic verifiable task small enough for a tiny GRU to learn by RL on a CPU.

Vocabulary (V = 16): ``0`` pad, ``1`` EOS, ``2`` the prompt terminator ``=`` (the
"generation prompt" of a chat template: it tells the model that the answer starts), and
``3 .. 15`` thirteen digits, rendered as the base-13 characters ``0123456789abc``.

A prompt is 2-4 random digits followed by ``=``, e.g. ``3 7 5 =``. The correct response is
the successor of the prompt's LAST digit (cyclically, ``c`` -> ``0``) followed by EOS:
``6`` then EOS. A uniformly random policy earns reward 1 with probability 1/V^2 = 1/256 on
its first two tokens; a policy that has learnt to stop after one token still guesses the
digit with probability 1/13 only, so the chance reward stays low (< 0.15) while the rule is
a one-token lookup a small recurrent model learns within a few dozen RL steps.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lightrft.adapters.fakes.prompt_source import FakePromptSource
from lightrft.domain.types import PromptRecord

VOCAB_SIZE = 16
PAD_ID = 0
EOS_ID = 1
EQUALS_ID = 2
FIRST_DIGIT_ID = 3
DIGIT_CHARS = "0123456789abc"
NUM_DIGITS = len(DIGIT_CHARS)  # 13 digits: ids 3 .. 15

_SPECIAL_TEXT = {PAD_ID: "<pad>", EOS_ID: "</s>", EQUALS_ID: "="}


def is_digit(token_id: int) -> bool:
    """Whether ``token_id`` is one of the thirteen digit tokens."""
    return FIRST_DIGIT_ID <= token_id < FIRST_DIGIT_ID + NUM_DIGITS


def successor(digit_id: int) -> int:
    """The digit after ``digit_id`` (cyclic): the task's rule."""
    if not is_digit(digit_id):
        raise ValueError(f"{digit_id} is not a digit token id")
    return FIRST_DIGIT_ID + (digit_id - FIRST_DIGIT_ID + 1) % NUM_DIGITS


def correct_answer(prompt_token_ids: Sequence[int]) -> int:
    """The correct first response token: the successor of the prompt's last digit."""
    digits = [t for t in prompt_token_ids if is_digit(t)]
    if not digits:
        raise ValueError(f"prompt {tuple(prompt_token_ids)} holds no digit")
    return successor(digits[-1])


def decode(token_ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
    """Text of ``token_ids``: digits as characters, specials as ``=``, ``</s>``, ``<pad>``.

    With ``skip_special_tokens`` (the default, like a tokenizer's), pad and EOS are dropped.
    """
    pieces = []
    for token in token_ids:
        if is_digit(token):
            pieces.append(DIGIT_CHARS[token - FIRST_DIGIT_ID])
        elif token == EQUALS_ID or not skip_special_tokens:
            pieces.append(_SPECIAL_TEXT.get(token, f"<{token}>"))
    return "".join(pieces)


def encode_digits(text: str) -> tuple[int, ...]:
    """Token ids of a string of digit characters (e.g. a reference answer)."""
    try:
        return tuple(FIRST_DIGIT_ID + DIGIT_CHARS.index(char) for char in text)
    except ValueError:
        raise ValueError(f"{text!r} holds a character outside {DIGIT_CHARS!r}") from None


def make_prompt(uid: str, digit_ids: Sequence[int]) -> PromptRecord:
    """The record of a prompt made of ``digit_ids``: tokens ``digits + [=]``, its reference."""
    prompt_ids = (*digit_ids, EQUALS_ID)
    return PromptRecord(
        uid=uid,
        prompt_text=" ".join(decode([t]) for t in prompt_ids),
        prompt_token_ids=prompt_ids,
        reference=decode([correct_answer(prompt_ids)]),
    )


def synthetic_records(n: int, seed: int = 0) -> list[PromptRecord]:
    """``n`` random prompts (2-4 digits each), deterministic in ``seed``."""
    rng = random.Random(seed)
    records = []
    for index in range(n):
        length = rng.randint(2, 4)
        digits = [rng.randrange(FIRST_DIGIT_ID, FIRST_DIGIT_ID + NUM_DIGITS) for _ in range(length)]
        records.append(make_prompt(f"synthetic-{seed}-{index}", digits))
    return records


def synthetic_prompts(n: int, seed: int = 0) -> FakePromptSource:
    """A prompt source of ``n`` random prompts of the task (see :func:`synthetic_records`)."""
    return FakePromptSource(synthetic_records(n, seed))
