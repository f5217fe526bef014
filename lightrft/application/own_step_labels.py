"""Process-reward rows from a policy's own samples: sample each prompt ``n`` times, cut every
sample into steps at the separator, label the steps with a checker.

A PRM scores what the policy writes during RL; rows written by hand (or by another model) miss
the lines a policy actually produces, and RL finds the lines the PRM never saw (a bare result,
the instruction's example) and is paid for them. Labelling the policy's own samples is how
Math-Shepherd (arXiv:2312.08935) builds its data; it estimates a step's label by rolling out
from it, where a task with an exact step checker (the built-in chains,
:func:`~lightrft.adapters.datasets.chain_solutions.line_labels`) labels it directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lightrft.domain.ports import RolloutEngine
from lightrft.domain.process_rewards import split_steps
from lightrft.domain.types import PromptRecord, SamplingParams

StepChecker = Callable[[int, Sequence[str]], Sequence[bool]]
"""(index of the prompt, the response's steps) -> whether each step is good."""


@dataclass(frozen=True)
class LabelledSample:
    """One sampled response of prompt ``prompt_index``: its non-blank steps (separator cut
    off) and their labels."""

    prompt_index: int
    steps: tuple[str, ...]
    labels: tuple[bool, ...]


def label_own_samples(
    engine: RolloutEngine,
    prompts: Sequence[PromptRecord],
    sampling: SamplingParams,
    check: StepChecker,
    *,
    separator: str,
    batch_size: int = 8,
) -> list[LabelledSample]:
    """``sampling.n`` samples of each prompt, each cut into steps at ``separator`` and labelled
    by ``check``; a response without a non-blank step is left out (it has nothing to label),
    and so is a blank step (the PRM scores it, but it carries no label of its own)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    samples: list[LabelledSample] = []
    for start in range(0, len(prompts), batch_size):
        batch = list(prompts[start : start + batch_size])
        for completion in engine.generate(batch, sampling):
            index = start + completion.prompt_index
            text = completion.text
            steps = [text[s.start : s.end] for s in split_steps(text, separator)]
            labels = list(check(index, steps))
            if len(labels) != len(steps):
                raise ValueError(
                    f"the step checker gave {len(labels)} labels for the {len(steps)} steps of "
                    f"a response to prompt {prompts[index].uid!r}"
                )
            kept = [
                (step.removesuffix(separator), label)
                for step, label in zip(steps, labels, strict=True)
                if step.strip()
            ]
            if kept:
                samples.append(
                    LabelledSample(
                        index, tuple(s for s, _ in kept), tuple(label for _, label in kept)
                    )
                )
    return samples
