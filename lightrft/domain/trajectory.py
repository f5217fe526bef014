"""Multi-turn trajectories: generated and observation token ids, and the loss mask.

A trajectory is the prompt followed by segments: each model turn (``trained=True``: the ids
exactly as the engine generated them, with its log-probs) and each observation
(``trained=False``: ids rendered once with the chat template). The response of the
trajectory is the concatenation of all segments; its loss mask is 1 on generated tokens and
0 on observation tokens, so log-probs, KL, advantages and losses count the model's own
tokens only (the estimators of :mod:`lightrft.domain.advantages` accept such masks with
holes: the "next token" is the next generated one).

Shapes: R response tokens (the sum of the segment lengths).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

EndReason = Literal[
    "done",  # the environment ended the episode
    "max_turns",  # rollout.agent.max_turns model turns were generated
    "token_budget",  # the next turn or observation would pass the episode's token budget
    "deadline",  # the episode's wall-clock deadline passed
    "length",  # a model turn hit max_new_tokens without stopping
    "env_error",  # the environment raised or timed out
    "env_invalid",  # the environment answered what cannot be used (ids outside the
    # vocabulary, a non-finite or absurd reward, too many counters)
    "observation_too_long",  # an observation passed rollout.agent.max_observation_tokens
    # the rollout gateway (a black-box agent program, lightrft/application/gateway_rollout.py)
    "agent_error",  # the agent program exited with a non-zero status or could not start
    "max_calls",  # the agent made more model calls than rollout.agent.gateway.max_calls
    "history_rewritten",  # a row of an episode whose agent rewrote its history after it
]
END_REASONS: tuple[EndReason, ...] = (
    "done",
    "max_turns",
    "token_budget",
    "deadline",
    "length",
    "env_error",
    "env_invalid",
    "observation_too_long",
    "agent_error",
    "max_calls",
    "history_rewritten",
)


@dataclass(frozen=True)
class Segment:
    """A run of response tokens: one model turn or one observation.

    ``logprobs`` are the engine's (one per id) for a model turn, ``None`` for observations
    or an engine that gives none.
    """

    token_ids: tuple[int, ...]
    text: str
    trained: bool
    logprobs: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.token_ids):
            raise ValueError(
                f"segment has {len(self.token_ids)} tokens but {len(self.logprobs)} logprobs"
            )
        if not self.trained and self.logprobs is not None:
            raise ValueError("an observation segment has no engine log-probs")


@dataclass(frozen=True)
class Episode:
    """A finished episode: its segments, rewards and counters.

    ``turn_rewards`` holds the environment's reward after each model turn (one per turn that
    reached the environment); ``reward`` is their sum. ``counters`` sums the environment's
    ``StepOutcome.counters`` plus the rollout's own (``env_errors``, ``env_timeouts``).
    """

    segments: tuple[Segment, ...]
    turn_rewards: tuple[float, ...]
    end_reason: EndReason
    counters: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not any(s.trained and s.token_ids for s in self.segments):
            raise ValueError("an episode needs at least one generated token")
        if self.segments and not self.segments[-1].trained:
            raise ValueError("an episode ends with a model turn, not an observation")

    @property
    def reward(self) -> float:
        """The episode's environment reward: the sum of its turn rewards."""
        return float(sum(self.turn_rewards))

    @property
    def turns(self) -> int:
        """Number of model turns."""
        return sum(1 for s in self.segments if s.trained)

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The response ids: every segment's ids, in order. Length R."""
        return joined_ids(self.segments)

    @property
    def loss_mask(self) -> tuple[int, ...]:
        """1 on generated tokens, 0 on observation tokens. Length R."""
        return joined_loss_mask(self.segments)

    @property
    def logprobs(self) -> tuple[float, ...] | None:
        """The engine's log-probs of generated tokens, 0.0 on observation tokens (masked
        out); ``None`` when a model turn has none. Length R."""
        if any(s.trained and s.logprobs is None for s in self.segments):
            return None
        return tuple(
            v
            for s in self.segments
            for v in (s.logprobs if s.logprobs is not None else (0.0,) * len(s.token_ids))
        )

    def turn_ends(self) -> tuple[int, ...]:
        """Response positions of the last token of each model turn (where a turn-level
        reward is credited). Length ``turns``."""
        ends: list[int] = []
        position = 0
        for s in self.segments:
            position += len(s.token_ids)
            if s.trained and s.token_ids:
                ends.append(position - 1)
        return tuple(ends)


def joined_ids(segments: Sequence[Segment]) -> tuple[int, ...]:
    """Every segment's ids, in order."""
    return tuple(t for s in segments for t in s.token_ids)


def joined_loss_mask(segments: Sequence[Segment]) -> tuple[int, ...]:
    """1 on the ids of trained segments, 0 on the others (aligned with :func:`joined_ids`)."""
    return tuple(int(s.trained) for s in segments for _ in s.token_ids)


def sum_counters(parts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Key-wise sum of counter mappings."""
    total: dict[str, float] = {}
    for part in parts:
        for key, value in part.items():
            total[key] = total.get(key, 0.0) + float(value)
    return total
