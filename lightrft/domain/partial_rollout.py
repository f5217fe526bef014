"""Partial rollouts: a generation paused every few tokens, resumed with newer weights, and
every generated token tagged with the policy version that sampled it.

A producer generating while the trainer updates (the split placement) runs a batch in chunks
of at most C new tokens per row. Between chunks it may load a newer policy version into the
engine; the unfinished rows then continue from their tokens so far (the engine re-reads
prompt + tokens with the new weights) and the next tokens, and their log-probs, come from
that version. The behaviour log-probs of each token are therefore those of the version that
sampled it, which is what the importance correction (``pi_prox / pi_behave``) needs.

Shape letters: B rows (prompts x n), one tuple per row.

- :class:`ChunkProgress`: what one chunk generated per row;
- :class:`ResumableEngine`: the optional engine capability (an engine that keeps its rows,
  random streams and cache between chunks, so that chunks with no weight load in between
  give exactly the unchunked generation);
- :func:`token_versions`: each row's per-token versions from the chunk log;
- :func:`token_staleness_metrics`: ``async/staleness_*`` over tokens and the fraction of
  samples that span more than one version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

from lightrft.domain.types import Completion, PromptRecord, SamplingParams


@dataclass(frozen=True)
class ChunkProgress:
    """One chunk: ``new_tokens[b]`` tokens added to row b; ``done`` once every row finished
    (a stop token or string, or ``max_new_tokens``)."""

    new_tokens: tuple[int, ...]
    done: bool

    def __post_init__(self) -> None:
        if any(n < 0 for n in self.new_tokens):
            raise ValueError(f"new_tokens must be >= 0, got {self.new_tokens}")


@runtime_checkable
class ResumableEngine(Protocol):
    """A rollout engine that can pause a generation and resume it, also after
    ``load_weights`` (it then recomputes its state of the unfinished rows from their prompt
    and tokens so far with the new weights). One generation at a time."""

    @property
    def can_resume(self) -> bool:
        """Whether the engine implements the three calls below (a remote engine may not)."""
        ...

    def begin_generation(self, prompts: Sequence[PromptRecord], sampling: SamplingParams) -> None:
        """Starts ``sampling.n`` rows per prompt (as ``generate``) without generating."""
        ...

    def continue_generation(self, max_new_tokens: int) -> ChunkProgress:
        """Adds at most ``max_new_tokens`` tokens to every unfinished row."""
        ...

    def finish_generation(self) -> list[Completion]:
        """The completions of the generation (all rows finished); closes it."""
        ...


def token_versions(chunks: Sequence[tuple[int, ChunkProgress]], rows: int) -> list[tuple[int, ...]]:
    """Per row, the version of each of its tokens, from ``(version, progress)`` per chunk in
    order. Example: chunks (3, (2, 1)), (4, (1, 0)) -> row 0 (3, 3, 4), row 1 (3,)."""
    tags: list[list[int]] = [[] for _ in range(rows)]
    for version, progress in chunks:
        if len(progress.new_tokens) != rows:
            raise ValueError(
                f"a chunk reports {len(progress.new_tokens)} rows, the generation has {rows}"
            )
        for row, count in enumerate(progress.new_tokens):
            tags[row].extend([version] * count)
    return [tuple(t) for t in tags]


def token_staleness_metrics(
    trained_version: int, versions: Sequence[Sequence[int]]
) -> dict[str, Tensor]:
    """``async/staleness_{mean,max}`` over every generated token (``trained_version`` minus
    the token's version) and ``async/multi_version_fraction``: samples whose tokens come from
    more than one version. Samples without tokens count in the fraction only."""
    if not versions:
        return {}
    flat = [v for sample in versions for v in sample]
    if any(v > trained_version for v in flat):
        raise ValueError(
            f"a token generated with version {max(flat)} cannot be trained by the older "
            f"version {trained_version}"
        )
    lags = torch.tensor([trained_version - v for v in flat] or [0], dtype=torch.float64)
    spanning = torch.tensor([len(set(sample)) > 1 for sample in versions], dtype=torch.float64)
    return {
        "async/staleness_mean": lags.mean(),
        "async/staleness_max": lags.max(),
        "async/multi_version_fraction": spanning.mean(),
    }
