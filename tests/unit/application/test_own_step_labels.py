"""PRM rows from a policy's own samples: every response cut at the separator, each step given
the checker's label, blank steps and step-less responses left out, batches indexed right."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from lightrft.application.own_step_labels import LabelledSample, label_own_samples
from lightrft.domain.types import Completion, PromptRecord, SamplingParams


class ScriptedEngine:
    """Answers sample j of prompt ``uid`` with ``texts[uid][j]``; counts its calls."""

    def __init__(self, texts: dict[str, Sequence[str]]) -> None:
        self.texts, self.calls = texts, 0

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        self.calls += 1
        return [
            Completion(i, (1,), self.texts[p.uid][j], "stop")
            for i, p in enumerate(prompts)
            for j in range(sampling.n)
        ]


def _prompts(n: int) -> list[PromptRecord]:
    return [PromptRecord(f"p{i}", "q", (1,)) for i in range(n)]


def test_steps_are_cut_labelled_and_blank_ones_left_out() -> None:
    engine = ScriptedEngine(
        {
            "p0": ["a\nbad\nc", "\n\n"],  # the second has no step at all
            "p1": ["a\n\nc\n", "x"],
            "p2": ["a\nc", "bad"],
        }
    )

    def check(index: int, steps: Sequence[str]) -> list[bool]:
        good, out = True, []
        for step in steps:  # good while no step so far reads "bad"
            good = good and "bad" not in step
            out.append(good)
        return out

    samples = label_own_samples(
        engine, _prompts(3), SamplingParams(n=2), check, separator="\n", batch_size=2
    )
    assert engine.calls == 2  # prompts 0-1, then 2: indices carried across batches
    assert samples == [
        LabelledSample(0, ("a", "bad", "c"), (True, False, False)),
        LabelledSample(1, ("a", "c"), (True, True)),  # the blank middle step dropped
        LabelledSample(1, ("x",), (True,)),
        LabelledSample(2, ("a", "c"), (True, True)),
        LabelledSample(2, ("bad",), (False,)),
    ]


def test_a_checker_giving_the_wrong_number_of_labels_is_named() -> None:
    engine = ScriptedEngine({"p0": ["a\nb"]})
    with pytest.raises(ValueError, match=r"1 labels for the 2 steps of a response to prompt 'p0'"):
        label_own_samples(
            engine, _prompts(1), SamplingParams(n=1), lambda i, s: [True], separator="\n"
        )


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        label_own_samples(
            ScriptedEngine({}), [], SamplingParams(), lambda i, s: [], separator="\n", batch_size=0
        )
