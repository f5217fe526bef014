"""Joining recorded model calls into token-exact trajectories, or splitting them.

A multi-turn episode driven by someone else's loop (an agent program through a gateway, a
text-based chat loop) gives a sequence of model calls, each with the exact prompt ids the
engine read and the ids it sampled. The calls form one trajectory only when each call's
prompt *begins with* the previous call's prompt followed by its sampled ids: then the ids in
between (tool results, a user message, the next assistant header) are observations, and the
trajectory is the first prompt followed by sampled and observation segments, token for token
what the engine saw. Where a prompt does not continue the context (the agent rewrote or
truncated its history, the chat template renders an earlier turn differently, or the model
sampled a non-canonical tokenization that re-rendering the text tokenizes otherwise), the
episode is split there: a new chain starts with that call's prompt. Nothing is re-tokenized,
so no trained token can differ from a sampled one (slime #2263, LlamaFactory #9630).

:func:`join_calls` is that rule; ``JoinedCalls.splits`` counts the splits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lightrft.domain.trajectory import Segment, joined_ids, joined_loss_mask


@dataclass(frozen=True)
class RecordedCall:
    """One model call: the prompt ids the engine read and the ids it sampled (with the
    engine's log-probs, one per sampled id, when known)."""

    prompt_ids: tuple[int, ...]
    sampled_ids: tuple[int, ...]
    logprobs: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.sampled_ids):
            raise ValueError(
                f"recorded call has {len(self.sampled_ids)} sampled ids but "
                f"{len(self.logprobs)} logprobs"
            )


@dataclass(frozen=True)
class CallChain:
    """Consecutive calls whose prompts continue each other: ``prompt_ids`` (the first
    call's prompt) followed by ``segments`` (sampled ids trained, the ids between one call's
    sample and the next call's prompt not)."""

    calls: tuple[int, ...]  # indices into the recorded calls
    prompt_ids: tuple[int, ...]
    segments: tuple[Segment, ...]

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The response ids after the prompt: every segment's ids in order."""
        return joined_ids(self.segments)

    @property
    def loss_mask(self) -> tuple[int, ...]:
        """1 on sampled ids, 0 on observation ids (aligned with :attr:`token_ids`)."""
        return joined_loss_mask(self.segments)


@dataclass(frozen=True)
class ChainBreak:
    """Where call ``call`` stopped continuing the context: the first position at which its
    prompt differs from the context (prompt + samples + observations so far)."""

    call: int
    position: int
    context_length: int


@dataclass(frozen=True)
class JoinedCalls:
    """The chains of an episode's calls, in call order, and where it was split."""

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


def join_calls(calls: Sequence[RecordedCall]) -> JoinedCalls:
    """Joins ``calls`` into chains (see the module doc): call k joins the current chain when
    its prompt begins with the chain's context, the ids after the context becoming an
    observation segment; otherwise it starts a new chain (a :class:`ChainBreak`)."""
    chains: list[CallChain] = []
    breaks: list[ChainBreak] = []
    members: list[int] = []
    prompt: tuple[int, ...] = ()
    segments: list[Segment] = []
    context: tuple[int, ...] = ()

    def close() -> None:
        if members:
            chains.append(CallChain(tuple(members), prompt, tuple(segments)))

    for k, call in enumerate(calls):
        if members and continues(context, call.prompt_ids):
            observation = tuple(call.prompt_ids[len(context) :])
            if observation:
                segments.append(Segment(observation, "", False))
        else:
            if members:
                position = first_difference(context, call.prompt_ids)
                breaks.append(ChainBreak(k, position or 0, len(context)))
            close()
            members, prompt, segments = [], tuple(call.prompt_ids), []
        members.append(k)
        segments.append(Segment(tuple(call.sampled_ids), "", True, call.logprobs))
        context = tuple(call.prompt_ids) + tuple(call.sampled_ids)
    close()
    return JoinedCalls(tuple(chains), tuple(breaks))
