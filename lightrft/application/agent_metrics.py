"""Step metrics of multi-turn episodes (``agent/*``), from the completions of a step."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from lightrft.domain.trajectory import END_REASONS, Episode, sum_counters
from lightrft.domain.types import Completion

MAX_COUNTER_METRICS = 256
"""Counter names logged per step at most (each episode holds at most
``rollout.agent.max_counter_keys``, but episodes may name different ones); the rest are
counted in ``agent/counter_names_dropped``."""


def episode_metrics(completions: Sequence[Completion]) -> dict[str, float]:
    """Means over the step's episodes: turns, generated and observation tokens, reward, the
    fraction that called a tool at least once (``agent/tool_use_rate``), the fraction ended
    by each reason, and every counter (per episode), e.g.
    ``agent/tool_calls``, ``agent/tool_errors/malformed``, ``agent/env_timeouts`` (at most
    ``MAX_COUNTER_METRICS`` of them). Empty when no completion is an episode."""
    episodes: list[Episode] = [c.episode for c in completions if c.episode is not None]
    if not episodes:
        return {}
    n = float(len(episodes))
    generated = sum(sum(e.loss_mask) for e in episodes)
    total = sum(len(e.token_ids) for e in episodes)
    metrics = {
        "agent/episodes": n,
        "agent/turns_mean": sum(e.turns for e in episodes) / n,
        "agent/generated_tokens_mean": generated / n,
        "agent/observation_tokens_mean": (total - generated) / n,
        "agent/env_reward_mean": sum(e.reward for e in episodes) / n,
        "agent/tool_use_rate": sum(e.counters.get("tool_calls", 0) > 0 for e in episodes) / n,
    }
    for reason in END_REASONS:
        metrics[f"agent/end/{reason}"] = sum(e.end_reason == reason for e in episodes) / n
    counters = sum_counters([e.counters for e in episodes])
    for key in _kept_counters(episodes, counters):
        metrics[f"agent/{key}"] = counters[key] / n
    if len(counters) > MAX_COUNTER_METRICS:
        metrics["agent/counter_names_dropped"] = float(len(counters) - MAX_COUNTER_METRICS)
    return metrics


def _kept_counters(episodes: Sequence[Episode], counters: dict[str, float]) -> list[str]:
    """At most ``MAX_COUNTER_METRICS`` counter names: those most episodes have."""
    if len(counters) <= MAX_COUNTER_METRICS:
        return list(counters)
    held = Counter(key for e in episodes for key in e.counters)
    return sorted(counters, key=lambda key: (-held[key], key))[:MAX_COUNTER_METRICS]
