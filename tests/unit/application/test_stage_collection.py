"""The collection stages: generate and score in their phases, the greedy baseline per
sample, and dynamic sampling's rounds, kept groups and re-indexing."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightrft.adapters.fakes import FakeCollective, FakeRolloutEngine, FakeRuleReward
from lightrft.application.params import RewardShapingParams
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.reward_scoring import Scores
from lightrft.application.stages.collection import Collection, SampleAndScore
from lightrft.application.stages.dynamic_sampling import (
    ROUND_SEED_STRIDE,
    DynamicSampling,
    concat,
    select_groups,
)
from lightrft.application.stages.generate import Generate
from lightrft.application.stages.greedy_baseline import GreedyBaseline
from lightrft.application.stages.records import Rollout
from lightrft.application.stages.score import Score
from lightrft.domain.types import PromptRecord, RewardResult, RewardSample, SamplingParams
from tests.helpers.stage_work import rollout

SAMPLING = SamplingParams(n=2, temperature=1.0, max_new_tokens=4)


def _stages(scores: dict[str, float] | None = None) -> tuple[Generate, Score, PhaseSwitcher]:
    phases = PhaseSwitcher({})
    weights = {"rule": 1.0} if scores is None else scores
    shaping = RewardShapingParams(weights=weights)
    return (
        Generate(FakeRolloutEngine(seed=1), phases),
        Score([FakeRuleReward()], shaping, phases),
        phases,
    )


def test_generate_runs_in_the_rollout_phase_with_the_given_sampling() -> None:
    engine = FakeRolloutEngine(seed=1)
    phases = PhaseSwitcher({})
    seen: list[str | None] = []
    original = engine.generate

    def noting(prompts: Sequence[PromptRecord], sampling: SamplingParams):  # type: ignore[no-untyped-def]
        seen.append(phases.current)
        return original(prompts, sampling)

    engine.generate = noting  # type: ignore[method-assign]
    prompts = rollout([0.0] * 4).prompts
    completions = Generate(engine, phases)(prompts, SAMPLING)
    assert seen == [Phase.ROLLOUT] and len(completions) == 4
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1]


def test_score_replaces_the_total_of_truncated_completions() -> None:
    phases = PhaseSwitcher({})
    base = rollout([0.0] * 4)  # every completion of the helper ends at the length limit
    shaping = RewardShapingParams(weights={"rule": 1.0}, truncated_reward=-1.0)
    scores = Score([FakeRuleReward()], shaping, phases)(base.prompts, base.completions)
    assert scores.total.tolist() == [-1.0] * 4
    assert scores.metrics["reward/truncated_replaced"] == 1.0


def test_the_greedy_baseline_gives_each_sample_its_prompts_greedy_reward() -> None:
    generate, _, phases = _stages()
    per_prompt = torch.tensor([0.25, 0.75])

    class ByPrompt:
        name = "rule"

        def score(self, samples: Sequence[RewardSample]) -> RewardResult:
            return RewardResult(per_prompt[[s.completion.prompt_index for s in samples]])

        def onload(self) -> None: ...
        def offload(self) -> None: ...

    score = Score([ByPrompt()], RewardShapingParams(weights={"rule": 1.0}), phases)  # type: ignore[list-item]
    baseline = GreedyBaseline(generate, score, SAMPLING)
    assert baseline.sampling.n == 1 and baseline.sampling.temperature == 0.0
    got = baseline(rollout([0.0] * 4))
    assert got.tolist() == [0.25, 0.25, 0.75, 0.75]


def _scored(groups: list[list[float]]) -> Rollout:
    return rollout([s for group in groups for s in group])


def test_select_groups_keeps_and_renumbers_the_given_prompts() -> None:
    base = _scored([[0.0, 1.0], [2.0, 2.0], [3.0, 4.0]])
    kept = select_groups(base, [2, 0])
    assert kept.prompts == [base.prompts[2], base.prompts[0]]
    # rows of prompt 0 come first (completion order is kept), renumbered to position 1
    assert [c.prompt_index for c in kept.completions] == [1, 1, 0, 0]
    assert kept.scores.total.tolist() == [0.0, 1.0, 3.0, 4.0]
    assert kept.scores.by_source["rule"].tolist() == [0.0, 1.0, 3.0, 4.0]


def test_concat_shifts_the_later_rounds_prompt_indices() -> None:
    first, second = _scored([[0.0, 1.0]]), _scored([[5.0, 6.0], [7.0, 8.0]])
    joined = concat([first, second])
    assert len(joined.prompts) == 3
    assert [c.prompt_index for c in joined.completions] == [0, 0, 1, 1, 2, 2]
    assert joined.scores.total.tolist() == [0.0, 1.0, 5.0, 6.0, 7.0, 8.0]


class Scripted(SampleAndScore):
    """Rounds return the given group scores; records the seeds asked for."""

    def __init__(self, rounds: list[list[list[float]]]) -> None:
        self.rounds, self.seeds = rounds, []  # type: ignore[var-annotated]

    def __call__(self, prompts: list[PromptRecord], seed: int) -> Rollout:
        self.seeds.append(seed)
        return _scored(self.rounds[len(self.seeds) - 1])


def test_dynamic_sampling_refills_until_enough_informative_groups() -> None:
    # 3 prompts: round 1 keeps group 1 only, round 2 keeps groups 0 and 2
    rounds = [[[1.0, 1.0], [0.0, 1.0], [2.0, 2.0]], [[3.0, 4.0], [5.0, 5.0], [6.0, 7.0]]]
    sample = Scripted(rounds)
    got, metrics = DynamicSampling(sample, 3, FakeCollective())(_scored(rounds[0]).prompts, 10)
    assert sample.seeds == [10, 10 + ROUND_SEED_STRIDE]
    assert got.scores.total.tolist() == [0.0, 1.0, 3.0, 4.0, 6.0, 7.0]
    assert [c.prompt_index for c in got.completions] == [0, 0, 1, 1, 2, 2]
    assert metrics == {
        "dynamic_sampling/rounds": 2.0,
        "dynamic_sampling/kept_groups": 3.0,
        "dynamic_sampling/hit_round_limit": 0.0,
        "dynamic_sampling/trimmed_groups": 0.0,
    }


def test_dynamic_sampling_trains_on_the_last_round_when_nothing_was_informative() -> None:
    flat = [[[1.0, 1.0]], [[2.0, 2.0]]]
    got, metrics = DynamicSampling(Scripted(flat), 2, FakeCollective())(_scored(flat[0]).prompts, 0)
    assert got.scores.total.tolist() == [2.0, 2.0]
    assert metrics["dynamic_sampling/hit_round_limit"] == 1.0


def test_collection_adds_the_baseline_when_there_is_one() -> None:
    generate, score, _ = _stages()
    once = SampleAndScore(generate, score, SAMPLING)
    prompts = rollout([0.0] * 4).prompts
    plain = Collection(once.once, None)(prompts, 3)
    assert plain.baseline is None and plain.metrics == {} and len(plain.rollout.completions) == 4
    with_baseline = Collection(once.once, GreedyBaseline(generate, score, SAMPLING))(prompts, 3)
    assert with_baseline.baseline is not None and with_baseline.baseline.shape == (4,)
    # the same seed draws the same completions
    assert [c.token_ids for c in with_baseline.rollout.completions] == [
        c.token_ids for c in plain.rollout.completions
    ]
    assert isinstance(plain.rollout.scores, Scores)
