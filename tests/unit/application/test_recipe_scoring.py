"""Scoring by recipe: each sample by the sources of its prompt's label only, with that
recipe's weights and gates; unknown labels refused or defaulted; metrics per recipe."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from lightrft.application.reward_scoring import score_completions
from lightrft.application.source_scoring import SourceConcurrency
from lightrft.domain.reward_recipes import RecipeBook, RewardRecipe, UnknownLabelError
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample


class LengthTimes:
    """Scores a sample ``factor x len(completion text)``; records the texts it was asked."""

    runs_concurrently = True

    def __init__(self, name: str, factor: float) -> None:
        self.name, self.factor = name, factor
        self.seen: list[list[str]] = []

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        texts = [s.completion.text for s in samples]
        self.seen.append(texts)
        scores = torch.tensor([self.factor * len(t) for t in texts], dtype=torch.float32)
        return RewardResult(scores, {"calls": torch.tensor(1.0)})

    def onload(self) -> None: ...

    def offload(self) -> None: ...

    def close(self) -> None: ...


def prompt(uid: str, label: str | None) -> PromptRecord:
    meta = {"where": f"d.jsonl row {uid}"} | ({} if label is None else {"label": label})
    return PromptRecord(uid, "q", (1,), reference="1", metadata=meta)


# prompt 0: label a, prompt 1: label b, prompt 2: no label; two samples each
PROMPTS = [prompt("0", "a"), prompt("1", "b"), prompt("2", None)]
TEXTS = ["x", "xx", "xxx", "xxxx", "y", "yy"]
COMPLETIONS = [Completion(i // 2, (2,), t, "stop") for i, t in enumerate(TEXTS)]


def book(unknown: str = "error") -> RecipeBook:
    return RecipeBook(
        recipes={
            "a": RewardRecipe({"one": 1.0, "shared": 0.5}),
            "b": RewardRecipe({"two": 2.0, "shared": 1.0}, gates={"two": 7.0}),
        },
        default=RewardRecipe({"base": 1.0}),
        unknown_label=unknown,  # type: ignore[arg-type]
    )


def sources() -> dict[str, LengthTimes]:
    return {
        n: LengthTimes(n, f) for n, f in [("base", 100), ("one", 1), ("two", 2), ("shared", 10)]
    }


@pytest.mark.parametrize("workers", [1, 4])
def test_each_sample_is_scored_by_its_recipe_only(workers: int) -> None:
    made = sources()
    scores = score_completions(
        list(made.values()), PROMPTS, COMPLETIONS, {"base": 1.0}, gate_value=-5.0,
        concurrency=SourceConcurrency(workers), recipes=book(),
    )  # fmt: skip
    assert made["one"].seen == [["x", "xx"]]
    assert made["two"].seen == [["xxx", "xxxx"]]
    assert made["shared"].seen == [["x", "xx", "xxx", "xxxx"]]  # asked once for both recipes
    assert made["base"].seen == [["y", "yy"]]  # the unlabelled prompt: the default recipe
    # a: 1*len + 0.5*10*len; b: 2*2*len + 1*10*len, gated at two's score 7 (len 3: 6 < 7)
    want = [6.0, 12.0, -5.0, 56.0, 100.0, 200.0]
    torch.testing.assert_close(scores.total, torch.tensor(want))
    torch.testing.assert_close(scores.by_source["one"], torch.tensor([1.0, 2, 0, 0, 0, 0]))
    torch.testing.assert_close(scores.by_source["base"], torch.tensor([0.0, 0, 0, 0, 100, 200]))
    m = scores.metrics
    assert m["reward/recipe/a/mean"] == pytest.approx(9.0)
    assert m["reward/recipe/b/mean"] == pytest.approx(25.5)
    assert m["reward/recipe/default/mean"] == pytest.approx(150.0)
    assert m["reward/recipe/a/share"] == pytest.approx(1 / 3)
    assert m["reward/shared/mean"] == pytest.approx(25.0)  # over the 4 samples it scored
    assert m["reward/gate_pass_rate"] == pytest.approx(5 / 6)
    assert m["reward/two/calls"] == 1.0


def test_a_source_no_sample_needs_is_not_asked() -> None:
    made = sources()
    only_a = [PROMPTS[0]]
    completions = [Completion(0, (2,), "x", "stop")]
    scores = score_completions(list(made.values()), only_a, completions, {}, recipes=book())
    assert made["two"].seen == [] and made["base"].seen == []
    assert "reward/two/mean" not in scores.metrics
    assert set(scores.by_source) == {"base", "one", "two", "shared"}


def test_an_unknown_label_is_named_or_defaulted() -> None:
    odd = [prompt("7", "c")]
    completions = [Completion(0, (2,), "zz", "stop")]
    with pytest.raises(UnknownLabelError, match=r"prompt '7' \(d\.jsonl row 7\) has label 'c'"):
        score_completions(list(sources().values()), odd, completions, {}, recipes=book())
    made = sources()
    scores = score_completions(list(made.values()), odd, completions, {}, recipes=book("default"))
    assert scores.total.tolist() == [200.0] and made["base"].seen == [["zz"]]


def test_recipes_need_their_sources() -> None:
    made = sources()
    del made["two"]
    with pytest.raises(ValueError, match=r"reward recipes name sources \['two'\]"):
        score_completions(list(made.values()), PROMPTS, COMPLETIONS, {}, recipes=book())


def test_the_book_refuses_what_it_cannot_route() -> None:
    with pytest.raises(ValueError, match="names the default recipe"):
        RecipeBook({"default": RewardRecipe({"a": 1.0})}, RewardRecipe({"a": 1.0}))
    with pytest.raises(ValueError, match="gates"):
        RewardRecipe({"a": 1.0}, gates={"b": 1.0})
    with pytest.raises(ValueError, match="at least one source"):
        RewardRecipe({})
