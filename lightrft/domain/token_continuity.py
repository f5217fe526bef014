"""Joining recorded model calls into token-exact trajectories, or splitting them.

A multi-turn episode driven by someone else's loop (an agent program through the rollout
gateway, a text-based chat loop) gives a sequence of model calls, each with the exact prompt
ids the engine read and the ids it sampled (with its log-probs). Joining:

- a call whose prompt ids *begin with* the context of an open chain (that chain's first
  prompt followed by every id after it so far, the last call's sampled ids included)
  continues that chain (the one with the longest such context when several do): the ids
  between that context and the call's prompt (tool results, a user message, the template's
  turn markers) become an observation segment (loss mask 0), then the call's sampled ids a
  trained segment (loss mask 1);
- any other call starts a new chain whose prompt is that call's prompt: the episode is split
  there (a :class:`ChainBreak`, counted by ``JoinedCalls.splits``). That happens when the
  agent rewrote, truncated or reordered its history, went on from another of ``n`` sampled
  choices, when the chat template renders an earlier turn differently, or when the model
  sampled a non-canonical tokenization that re-rendering the text tokenizes otherwise;
- a call that sampled no id adds nothing (it is skipped).

So every sampled id is trained exactly once and only sampled ids are trained; nothing is
re-tokenized: each chain's prompt plus response is, token for token, the context the engine
saw at the chain's last call plus what it sampled there, so no trained token can differ from
a sampled one (slime #2263, LlamaFactory #9630).

Shapes: each chain's response is R ids (the sum of its segments' lengths).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lightrft.domain.trajectory import EndReason, Episode, Segment, joined_ids, joined_loss_mask
from lightrft.domain.types import FinishReason


@dataclass(frozen=True)
class RecordedCall:
    """One sampled choice of one model call: the prompt ids the engine read and the ids it
    sampled, with the engine's log-probs (one per sampled id, ``None`` when it gives none).

    ``text`` is the sample's decoded text (kept on its trained segment), ``finish_reason``
    why sampling stopped, ``policy_version`` the weight syncs the engine had received when it
    sampled.
    """

    prompt_ids: tuple[int, ...]
    sampled_ids: tuple[int, ...]
    logprobs: tuple[float, ...] | None = None
    text: str = ""
    finish_reason: FinishReason = "stop"
    policy_version: int = 0

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.sampled_ids):
            raise ValueError(
                f"recorded call has {len(self.sampled_ids)} sampled ids but "
                f"{len(self.logprobs)} logprobs"
            )

    @property
    def context(self) -> tuple[int, ...]:
        """The prompt followed by the sampled ids: what a continuing call's prompt starts with."""
        return self.prompt_ids + self.sampled_ids


@dataclass(frozen=True)
class CallChain:
    """Calls whose prompts continue each other: ``prompt_ids`` (the first call's prompt)
    followed by ``segments`` (sampled ids trained, the ids between one call's sample and the
    next call's prompt not). ``calls``: indices of the joined calls in the recorded ones."""

    calls: tuple[int, ...]
    prompt_ids: tuple[int, ...]
    segments: tuple[Segment, ...]

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The response ids after the prompt: every segment's ids in order. Length R."""
        return joined_ids(self.segments)

    @property
    def loss_mask(self) -> tuple[int, ...]:
        """1 on sampled ids, 0 on observation ids (aligned with :attr:`token_ids`)."""
        return joined_loss_mask(self.segments)

    @property
    def text(self) -> str:
        """The text of the chain's last model turn."""
        return next(s.text for s in reversed(self.segments) if s.trained)

    def episode(
        self,
        turn_rewards: tuple[float, ...] = (),
        end_reason: EndReason = "done",
        counters: Mapping[str, float] | None = None,
    ) -> Episode:
        """The chain as an :class:`Episode` (its ids, loss mask and log-probs)."""
        return Episode(self.segments, turn_rewards, end_reason, dict(counters or {}))


@dataclass(frozen=True)
class ChainBreak:
    """Where call ``call`` continued no open chain: the first position at which its prompt
    differs from the context (prompt + samples + observations so far, ``context_length``
    ids) of the open chain it follows furthest (the latest such chain on a tie)."""

    call: int
    position: int
    context_length: int


@dataclass(frozen=True)
class JoinedCalls:
    """The chains of an episode's calls, in the order they started, and where it was split."""

    chains: tuple[CallChain, ...]
    breaks: tuple[ChainBreak, ...]

    @property
    def splits(self) -> int:
        """How many times the episode was split (chains - 1; 0 when token-exact)."""
        return len(self.breaks)


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where ``a`` and ``b`` differ (a length when one is a prefix of the
    other and they differ in length), or ``None`` when they are equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def continues(context: Sequence[int], prompt: Sequence[int]) -> bool:
    """Whether ``prompt`` begins with the whole of ``context``."""
    return len(prompt) >= len(context) and tuple(prompt[: len(context)]) == tuple(context)


@dataclass
class _OpenChain:
    prompt_ids: tuple[int, ...]
    calls: list[int] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    context: tuple[int, ...] = ()

    def add(self, k: int, call: RecordedCall) -> None:
        observation = tuple(call.prompt_ids[len(self.context) :]) if self.calls else ()
        if observation:
            self.segments.append(Segment(observation, "", False))
        self.segments.append(Segment(tuple(call.sampled_ids), call.text, True, call.logprobs))
        self.calls.append(k)
        self.context = tuple(call.prompt_ids) + tuple(call.sampled_ids)

    def closed(self) -> CallChain:
        return CallChain(tuple(self.calls), self.prompt_ids, tuple(self.segments))


def join_calls(calls: Sequence[RecordedCall]) -> JoinedCalls:
    """Joins ``calls`` into chains (see the module doc): a call continues the open chain with
    the longest context its prompt begins with; otherwise it starts a new chain (a
    :class:`ChainBreak` once a chain exists). Calls without sampled ids are skipped."""
    chains: list[_OpenChain] = []
    breaks: list[ChainBreak] = []
    for k, call in enumerate(calls):
        if not call.sampled_ids:
            continue
        extendable = [c for c in chains if continues(c.context, call.prompt_ids)]
        if extendable:
            max(extendable, key=lambda c: len(c.context)).add(k, call)
            continue
        if chains:
            breaks.append(_break(k, call.prompt_ids, chains))
        chain = _OpenChain(tuple(call.prompt_ids))
        chain.add(k, call)
        chains.append(chain)
    return JoinedCalls(tuple(c.closed() for c in chains), tuple(breaks))


def _break(k: int, prompt: Sequence[int], chains: Sequence[_OpenChain]) -> ChainBreak:
    """The break of call ``k`` against the open chain its prompt follows furthest."""
    position, i = max((first_difference(c.context, prompt) or 0, i) for i, c in enumerate(chains))
    return ChainBreak(k, position, len(chains[i].context))
