"""EvalSuite with a scripted engine: greedy accuracy, pass@k and maj@k by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from lightrft.adapters.rewards import MathAnswerGrader
from lightrft.adapters.rewards.answer_grader import answer_key
from lightrft.application.eval_suite import EvalSuite, SuiteParams
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

PROMPTS = [PromptRecord(f"p{i}", f"q{i}", (1, 2), reference=ref) for i, ref in enumerate("48")]
GREEDY = {"p0": "#### 4", "p1": "I think 9"}
SAMPLED = {
    # prompt 0 (answer 4): 2 of 4 correct; majority of all 4: 4 vs 5 tie -> 5 (first)
    "p0": ["#### 5", "#### 4", "#### 4", "#### 5"],
    # prompt 1 (answer 8): 1 of 4 correct; "no answer" never votes
    "p1": ["no idea", "#### 8", "#### 3", "#### 3"],
}


class ScriptedEngine:
    """Returns the scripted texts: greedy ones at temperature 0, else the sampled lists."""

    is_awake = True

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        out = []
        for i, p in enumerate(prompts):
            texts = [GREEDY[p.uid]] if sampling.greedy else SAMPLED[p.uid][: sampling.n]
            out += [Completion(i, (5,) * (j + 1), t, "stop") for j, t in enumerate(texts)]
        return out


def test_metrics_by_hand() -> None:
    params = SuiteParams(n_samples=4, ks=(1, 2, 4), batch_size=1)
    seen: list[int] = []
    result = EvalSuite(ScriptedEngine(), MathAnswerGrader(), params, seen.append).evaluate(
        "toy", PROMPTS
    )
    m = result.metrics
    assert seen == [1, 1]
    assert m["greedy_accuracy"] == 0.5  # p0 right, p1 says 9
    assert m["greedy_no_answer"] == 0.0  # "I think 9" has a last number
    # pass@1 = mean correct fraction = (2/4 + 1/4) / 2
    assert m["pass@1"] == pytest.approx(0.375)
    # pass@2: p0 1 - C(2,2)/C(4,2) = 5/6; p1 1 - C(3,2)/C(4,2) = 1/2 -> mean 2/3
    assert m["pass@2"] == pytest.approx((5 / 6 + 0.5) / 2)
    assert m["pass@4"] == 1.0
    # maj@1: p0 first sample 5 (wrong), p1 first sample has no answer (wrong) -> 0
    assert m["maj@1"] == 0.0
    # maj@2: p0 5:4 tie -> 5 wrong; p1 only "8" votes -> right -> 1/2
    assert m["maj@2"] == 0.5
    # maj@4: p0 tie 2:2 -> 5 (first) wrong; p1 3 beats 8 -> wrong
    assert m["maj@4"] == 0.0
    assert result.records[1]["sample_answers"][0] is None


def test_answer_keys_group_equivalent_answers() -> None:
    assert answer_key("1/2") == answer_key("0.5") == answer_key("\\frac{1}{2}") == "num:1/2"
    assert answer_key("1,080") == answer_key("$1080") == "num:1080"
    assert answer_key("50%") == "num:50"
    assert answer_key("x^2 + 1") == answer_key("x^2+1") == "text:x^2+1"


def test_params_are_checked() -> None:
    with pytest.raises(ValueError, match="every k"):
        SuiteParams(n_samples=2, ks=(4,))
    with pytest.raises(ValueError, match="nothing to evaluate"):
        SuiteParams(greedy=False)
