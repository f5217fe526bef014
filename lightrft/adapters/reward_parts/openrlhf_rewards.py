"""Reading OpenRLHF's reward answer, shared by the remote source that speaks its protocol and
the ``python`` source that runs its ``reward_func`` files.

OpenRLHF's reward server answers ``{"rewards": [...]}``; since v0.8 (PR #1038, "support
extra_logs and dynamic filtering scores for remote rm and agents") also ``"scores"`` (the
reward in [0, 1] used for dynamic filtering) and ``"extra_logs"`` (name -> values logged to
W&B), and a ``reward_func(queries, prompts, labels)`` returns the same dict or the rewards
alone (a tensor or a list). Here the rewards are the scores; ``scores`` is not used (the
filters of this project read the rewards); ``extra_logs`` become metrics ``extra_<name>``
(the mean of the numbers given). The reader takes plain Python (tensors already turned into
lists) and raises ``ValueError`` with a one-line reason for anything else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def openrlhf_rewards(
    answer: Any, count: int, *, bare_allowed: bool
) -> tuple[list[Any], dict[str, float]]:
    """(``count`` raw rewards in order, ``extra_<name>`` metrics) of an OpenRLHF answer;
    ``bare_allowed``: the rewards alone (a list, or one number when ``count`` is 1) are
    accepted too (a ``reward_func``'s value; a server must send the object)."""
    if isinstance(answer, Mapping):
        if "rewards" not in answer:
            raise ValueError(f"the answer has no 'rewards' (keys: {sorted(map(str, answer))})")
        rewards, extra = answer["rewards"], answer.get("extra_logs")
    elif bare_allowed:
        rewards, extra = answer, None
    else:
        raise ValueError(f"expected an object with 'rewards', got {type(answer).__name__}")
    if count == 1 and not isinstance(rewards, list):
        rewards = [rewards]  # one query: a scalar reward (a 0-dim tensor's tolist())
    if not isinstance(rewards, list):
        raise ValueError(f"'rewards' must be a list, got {type(rewards).__name__}")
    if len(rewards) != count:
        raise ValueError(f"{len(rewards)} rewards for {count} samples")
    return rewards, extra_log_metrics(extra)


def extra_log_metrics(extra: Any) -> dict[str, float]:
    """``extra_<name>``: the mean of the finite numbers of each ``extra_logs`` entry (a number
    or a list of them); other entries are left out."""
    if not isinstance(extra, Mapping):
        return {}
    metrics: dict[str, float] = {}
    for name, value in extra.items():
        values = value if isinstance(value, list) else [value]
        numbers = [
            float(v)
            for v in values
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        ]
        if numbers:
            metrics[f"extra_{name}"] = sum(numbers) / len(numbers)
    return metrics
