"""Config models of the built-in reward sources (``reward.sources``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lightrft.entrypoints.config.components import (
    REWARD_SOURCE_CONFIGS,
    RewardSourceSection,
    RunView,
    register_config,
)
from lightrft.entrypoints.config.extractor_field import ExtractorNames, extractors_field


class AnswerExtractorsSection(RewardSourceSection):
    """Base of reward sources that extract a final answer from the response."""

    extractors: ExtractorNames = extractors_field()


@register_config(REWARD_SOURCE_CONFIGS, "math")
class MathRewardConfig(AnswerExtractorsSection):
    """1 when the response's final answer equals the reference (math-verify), else 0."""

    type: Literal["math"] = "math"


@register_config(REWARD_SOURCE_CONFIGS, "choice")
class ChoiceRewardConfig(RewardSourceSection):
    """1 when the response's first word is the reference (short answers), else 0."""

    type: Literal["choice"] = "choice"


@register_config(REWARD_SOURCE_CONFIGS, "format")
class FormatRewardConfig(RewardSourceSection):
    """1 when the response is ``<think>...</think>`` followed by an answer, else 0."""

    type: Literal["format"] = "format"
    think_tag: str = Field("think", description="The reasoning tag name.")
    pattern: str | None = Field(
        None, description="One regex the whole response must match instead (e.g. an answer line)."
    )


@register_config(REWARD_SOURCE_CONFIGS, "length")
class LengthRewardConfig(RewardSourceSection):
    """DAPO's soft overlong punishment as a reward source (0 .. -factor)."""

    type: Literal["length"] = "length"
    max_length: int | None = Field(None, gt=0, description="L_max; null: rollout.max_new_tokens.")
    buffer: int | None = Field(
        None, gt=0, description="L_cache, the penalized tail; null: a quarter of L_max."
    )
    factor: float = Field(1.0, ge=0, description="Penalty at L_max.")

    def check_in_run(self, run: RunView) -> None:
        if run.reward.overlong_buffer is not None:
            raise ValueError(
                f"reward source {self.label!r} (type length) and reward.overlong_buffer both "
                "apply DAPO's overlong penalty; keep one of them"
            )
        limit = self.max_length or run.rollout.max_new_tokens
        if self.buffer is not None and self.buffer > limit:
            named = "max_length" if self.max_length else "rollout.max_new_tokens"
            raise ValueError(
                f"reward source {self.label!r} (type length): buffer ({self.buffer}) exceeds "
                f"{named} ({limit}); the penalized tail must fit in the response budget"
            )


@register_config(REWARD_SOURCE_CONFIGS, "python")
class PythonRewardConfig(RewardSourceSection):
    """Your function ``module:function`` (or ``file.py:function``) in an isolated worker
    process, called the way its framework calls it (``convention``)."""

    type: Literal["python"] = "python"
    function: str = Field(
        description="'module:function' or 'path/file.py:function' to call; a bare "
        "'path/file.py' means compute_score (convention verl) or reward_func (openrlhf)."
    )
    convention: Literal["lightrft", "verl", "trl", "openrlhf"] = Field(
        "lightrft",
        description="How it is called: lightrft fn(prompt, response, reference) per sample; "
        "verl compute_score(data_source, solution_str, ground_truth, extra_info) per sample; "
        "trl fn(prompts, completions, completion_ids, **columns) per batch; openrlhf "
        "reward_func(queries, prompts, labels) per batch (docs/reward-models.md).",
    )
    timeout_s: float = Field(
        5.0, gt=0, description="Per-call timeout (a call scores a batch for trl / openrlhf)."
    )


@register_config(REWARD_SOURCE_CONFIGS, "ttrl")
class MajorityVoteRewardConfig(AnswerExtractorsSection):
    """TTRL: agreement with the majority answer of the sample's group (no labels used)."""

    type: Literal["ttrl"] = "ttrl"
    agree_score: float = Field(1.0, description="Score of a sample whose answer is the majority.")
    disagree_score: float = Field(
        0.0, description="Score otherwise (also: no extractable answer, no majority)."
    )
    min_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="A majority held by fewer than this fraction of the group is not used as "
        "a label: the group scores disagree_score throughout (0: TTRL as published).",
    )

    def check_in_run(self, run: RunView) -> None:
        if run.rollout.n_samples_per_prompt < 2:
            raise ValueError(
                f"reward source {self.label!r} (type ttrl) votes within a prompt's group: "
                "rollout.n_samples_per_prompt must be >= 2"
            )


class ThinkBoxedRuleConfig(RewardSourceSection):
    """The original LightRFT's rule: (1 - format_weight) x accuracy (the last \\boxed{} equals
    the reference) + format_weight x format (a <think>...</think> block before the box)."""

    format_weight: float = Field(
        0.1, ge=0, le=1, description="Weight of the format check (the original's 0.1)."
    )


@register_config(REWARD_SOURCE_CONFIGS, "gsm8k_rule")
class Gsm8kRuleConfig(ThinkBoxedRuleConfig):
    """The original's gsm8k_rule: 0.9 accuracy of the last \\boxed{} + 0.1 format."""

    type: Literal["gsm8k_rule"] = "gsm8k_rule"


@register_config(REWARD_SOURCE_CONFIGS, "avqa_rule")
class AvqaRuleConfig(RewardSourceSection):
    """The original's R1-AQA rule: accuracy of the <answer> text + its format (at most 2)."""

    type: Literal["avqa_rule"] = "avqa_rule"


@register_config(REWARD_SOURCE_CONFIGS, "judge_agreement")
class JudgeAgreementConfig(RewardSourceSection):
    """A judge trained by RL (the original's grm_vl_rl): accuracy of its [[X]] verdict against
    the preference label (the prompt's reference) + format_weight x a <think> block before
    it."""

    type: Literal["judge_agreement"] = "judge_agreement"
    labels: list[str] = Field(
        default_factory=lambda: ["A", "B"],
        min_length=2,
        description="Verdict labels, response 1's first (the references judge_pairs writes).",
    )
    format_weight: float = Field(
        1.0, ge=0, description="Weight of the format check (the original's 1.0)."
    )
    think_tag: str = Field("think", description="Tag of the reasoning block before the verdict.")
    verdict: Literal["brackets", "answer"] = Field(
        "brackets",
        description="How the verdict is written: brackets ([[A]] / [[B]], the built-in judge "
        "prompt) or answer (the original's <answer>Video 1 is better</answer>, its judge "
        "prompts by task type: data.*.system_prompt_file).",
    )


@register_config(REWARD_SOURCE_CONFIGS, "geo3k_rule")
class Geo3kRuleConfig(ThinkBoxedRuleConfig):
    """The original's geo3k_rule: the same scoring as gsm8k_rule."""

    type: Literal["geo3k_rule"] = "geo3k_rule"
