"""What one prompt costs the rank that gets it: the cost model of balanced batches.

A step's prompts are dealt over data-parallel ranks by cost
(:mod:`~lightrft.domain.balanced_assignment`); the step waits for the slowest rank, so the
cost should track each prompt's compute. For a prompt of ``T`` tokens (media placeholders
expanded: every position the language model runs over) whose media the encoder runs over
``E`` units (the payload's :data:`~lightrft.domain.modality.COST_KEY`: an image's or a
video's patches ``t*h*w`` before merging, four per language-model position with merge 2; an
audio clip's encoder output positions; 0 for text)::

    cost = T + round(w * E)

``w`` (``rollout.balance_encoder_weight``) is the price of one encoder unit in language-model
tokens. A dense transformer spends about 2 x (its parameters) FLOPs a token, so ``w`` is
about (encoder parameters) / (language-model parameters): about 0.1 for a 7B Qwen2.5-VL (a
~0.7 B vision tower); 0.66 for the tiny Qwen2-VL of ``bench/bench_mm_balance.py``.
``w = 1`` (the default) counts a patch as a token; ``w = 0`` balances tokens alone.

Every sample of a prompt decodes the same number of new tokens on average, so the responses
add the same amount to every prompt and, every rank holding as many prompts, do not move the
balance: they are left out.
"""

from __future__ import annotations

from lightrft.domain.modality import Payload, media_cost


def prompt_cost(tokens: int, payload: Payload, encoder_weight: float = 1.0) -> int:
    """``tokens + round(encoder_weight * media_cost(payload))`` (module docstring)."""
    if encoder_weight < 0:
        raise ValueError(f"encoder_weight must be >= 0, got {encoder_weight}")
    return tokens + round(encoder_weight * media_cost(payload))
