"""Partial rollouts: the ``RolloutEngine`` port over an engine, generating in chunks and
loading newer weights between them (see :mod:`lightrft.domain.partial_rollout`).

:class:`ChunkedEngine` runs every ``generate`` as a sequence of chunks of at most
``chunk_tokens`` new tokens per row. Before each chunk after the first it calls
``refresh()``, which may load a newer policy version into the engine (the producer's
verified sync) and returns the version the engine then holds; every completion comes back
with ``token_versions``, the version that sampled each token, and ``logprobs`` from that
same version (the engine's own log-probs of each chunk).

Two ways to resume a generation:

- an engine with the :class:`~lightrft.domain.partial_rollout.ResumableEngine` capability
  keeps its rows, random streams and decoding state between chunks and re-reads the
  unfinished rows after new weights. Chunks without a weight load in between give exactly
  the tokens of one uninterrupted ``generate`` (tested with the fake engine);
- any other engine: :class:`ContinuationSession` asks ``generate`` for each chunk, the
  unfinished rows as new prompts (prompt + tokens so far, ``n=1``, a seed per chunk, no
  first-token temperature after the first chunk). Each token is still drawn from the
  engine's policy given its prefix, but the random draws differ from an unchunked
  generation, a stop string spanning two chunks is not seen, and the text is the
  concatenation of the chunks' texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from lightrft.application.engine_wrapper import EngineWrapper
from lightrft.domain.partial_rollout import ChunkProgress, ResumableEngine, token_versions
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams

CHUNK_SEED_STRIDE = 7919  # seed of chunk c: seed + stride * c (as dynamic sampling's rounds)


class GenerationSession(Protocol):
    """One generation advanced chunk by chunk."""

    def advance(self, max_new_tokens: int) -> ChunkProgress:
        """At most ``max_new_tokens`` more tokens per unfinished row."""
        ...

    def finish(self) -> list[Completion]:
        """The completions, once ``advance`` said done."""
        ...


class NativeSession:
    """A generation kept inside a :class:`ResumableEngine`."""

    def __init__(
        self, engine: ResumableEngine, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> None:
        self.engine = engine
        engine.begin_generation(prompts, sampling)

    def advance(self, max_new_tokens: int) -> ChunkProgress:
        return self.engine.continue_generation(max_new_tokens)

    def finish(self) -> list[Completion]:
        return self.engine.finish_generation()


@dataclass
class _Row:
    prompt: PromptRecord
    prompt_index: int
    sample: int
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    finish_reason: FinishReason | None = None


class ContinuationSession:
    """A generation resumed through ``generate`` alone (see the module docstring)."""

    def __init__(
        self, engine: RolloutEngine, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> None:
        self.engine, self.prompts, self.sampling = engine, list(prompts), sampling
        self.rows = [_Row(p, i, j) for i, p in enumerate(self.prompts) for j in range(sampling.n)]
        self.chunks = 0

    def advance(self, max_new_tokens: int) -> ChunkProgress:
        s = self.sampling
        going = [r for r in self.rows if r.finish_reason is None]
        if not going:
            return ChunkProgress((0,) * len(self.rows), True)
        done_so_far = len(going[0].token_ids)  # unfinished rows all ran every position
        if any(len(r.token_ids) != done_so_far for r in going):
            raise RuntimeError(
                "the engine ended rows with finish_reason 'length' before the chunk's budget"
            )
        budget = min(max_new_tokens, s.max_new_tokens - done_so_far)
        if self.chunks == 0:
            completions = self.engine.generate(self.prompts, replace(s, max_new_tokens=budget))
        else:
            inputs = [
                replace(
                    r.prompt,
                    uid=f"{r.prompt.uid}#{r.sample}",  # one random stream per row
                    prompt_token_ids=r.prompt.prompt_token_ids + tuple(r.token_ids),
                )
                for r in going
            ]
            seed = None if s.seed is None else s.seed + CHUNK_SEED_STRIDE * self.chunks
            chunk = replace(s, n=1, max_new_tokens=budget, seed=seed, first_token_temperature=None)
            completions = self.engine.generate(inputs, chunk)
        self.chunks += 1
        if len(completions) != len(going):
            raise RuntimeError(
                f"the engine returned {len(completions)} completions for {len(going)} rows"
            )
        before = [len(r.token_ids) for r in self.rows]
        for row, c in zip(going, completions, strict=True):
            row.token_ids.extend(c.token_ids)
            row.logprobs.extend(c.logprobs or (0.0,) * len(c.token_ids))
            row.texts.append(c.text)
            if c.finish_reason == "stop" or len(row.token_ids) >= s.max_new_tokens:
                row.finish_reason = c.finish_reason
        added = tuple(len(r.token_ids) - n for r, n in zip(self.rows, before, strict=True))
        return ChunkProgress(added, all(r.finish_reason is not None for r in self.rows))

    def finish(self) -> list[Completion]:
        if any(r.finish_reason is None for r in self.rows):
            raise RuntimeError("finish() before every row finished")
        return [
            Completion(
                r.prompt_index,
                tuple(r.token_ids),
                "".join(r.texts),
                r.finish_reason or "length",
                tuple(r.logprobs),
            )
            for r in self.rows
        ]


def open_session(
    engine: RolloutEngine, prompts: Sequence[PromptRecord], sampling: SamplingParams
) -> GenerationSession:
    """The engine's own resumable generation when it has one, else continuations."""
    if isinstance(engine, ResumableEngine) and engine.can_resume:
        return NativeSession(engine, prompts, sampling)
    return ContinuationSession(engine, prompts, sampling)


class ChunkedEngine(EngineWrapper):
    """See the module docstring; implements the ``RolloutEngine`` port. ``weight_loads``
    counts the chunks that began with another version than the previous one."""

    def __init__(self, engine: RolloutEngine, chunk_tokens: int, refresh: Callable[[], int]):
        if chunk_tokens < 1:
            raise ValueError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
        self.engine, self.chunk_tokens, self.refresh = engine, chunk_tokens, refresh
        self.weight_loads = 0

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt, each token tagged with its version."""
        session = open_session(self.engine, prompts, sampling)
        version = self.refresh()
        chunks: list[tuple[int, ChunkProgress]] = []
        while True:
            progress = session.advance(self.chunk_tokens)
            chunks.append((version, progress))
            if progress.done:
                break
            newer = self.refresh()
            self.weight_loads += newer != version
            version = newer
        completions = session.finish()
        tags = token_versions(chunks, len(completions))
        return [replace(c, token_versions=t) for c, t in zip(completions, tags, strict=True)]
