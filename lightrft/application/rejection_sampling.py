"""Rejection sampling of judgements: sample ``n`` judgements of each judge prompt from a
``RolloutEngine`` and keep the ones whose verdict reaches the prompt's label.

The judge prompts carry their label as ``PromptRecord.reference`` (e.g. ``A`` when the
preferred response is shown first, :mod:`~lightrft.adapters.datasets.judge_pairs`);
``agrees(judgement, label)`` says whether a judgement's verdict reads as that label (an
unparsable verdict does not). Prompts are sent in batches of ``batch_size``; the kept
judgements are the SFT targets of the next step (``lightrft rm rejection-sample``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lightrft.domain.ports import RolloutEngine
from lightrft.domain.types import PromptRecord, SamplingParams


@dataclass(frozen=True)
class KeptJudgement:
    """One accepted judgement: its prompt's index in the input, the sample's index among
    the prompt's ``n``, and the text."""

    prompt_index: int
    sample_index: int
    text: str


@dataclass(frozen=True)
class RejectionSample:
    """What rejection sampling kept, and per prompt how many of its ``n`` samples it kept."""

    kept: tuple[KeptJudgement, ...]
    kept_per_prompt: tuple[int, ...]
    samples_per_prompt: int

    @property
    def acceptance_rate(self) -> float:
        """Kept judgements over sampled ones."""
        total = len(self.kept_per_prompt) * self.samples_per_prompt
        return len(self.kept) / total if total else 0.0

    @property
    def prompts_with_a_kept_judgement(self) -> int:
        """Prompts at least one of whose judgements was kept."""
        return sum(1 for count in self.kept_per_prompt if count)


def rejection_sample(
    engine: RolloutEngine,
    prompts: Sequence[PromptRecord],
    sampling: SamplingParams,
    agrees: Callable[[str, str], bool],
    *,
    batch_size: int = 8,
    max_kept_per_prompt: int | None = None,
) -> RejectionSample:
    """Samples ``sampling.n`` judgements per prompt; keeps those ``agrees`` accepts (at most
    ``max_kept_per_prompt`` per prompt, first sampled first; None: all)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    kept: list[KeptJudgement] = []
    counts = [0] * len(prompts)
    for start in range(0, len(prompts), batch_size):
        batch = list(prompts[start : start + batch_size])
        for position, completion in enumerate(engine.generate(batch, sampling)):
            index = start + completion.prompt_index
            label = prompts[index].reference
            if label is None:
                raise ValueError(f"judge prompt {prompts[index].uid!r} has no label (reference)")
            full = max_kept_per_prompt is not None and counts[index] >= max_kept_per_prompt
            if full or not agrees(completion.text, label):
                continue
            counts[index] += 1
            kept.append(KeptJudgement(index, position % sampling.n, completion.text))
    return RejectionSample(tuple(kept), tuple(counts), sampling.n)
