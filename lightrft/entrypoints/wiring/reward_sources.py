"""Built-in reward source builders (``reward.sources``) and the run's reward sources."""

from __future__ import annotations

from lightrft.adapters.reward_models.judge_agreement import JudgeAgreementReward
from lightrft.adapters.rewards import (
    AnswerTagRule,
    ChoiceAnswerReward,
    FormatReward,
    LengthReward,
    MajorityVoteReward,
    MathAnswerGrader,
    MathAnswerReward,
    PythonFunctionReward,
    ThinkBoxedRule,
)
from lightrft.domain.ports import RewardSource
from lightrft.entrypoints.config.reward_configs import (
    AvqaRuleConfig,
    ChoiceRewardConfig,
    FormatRewardConfig,
    JudgeAgreementConfig,
    LengthRewardConfig,
    MajorityVoteRewardConfig,
    MathRewardConfig,
    PythonRewardConfig,
    ThinkBoxedRuleConfig,
)
from lightrft.entrypoints.config.reward_recipes import recipe_sections
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext, build


def build_math(section: MathRewardConfig, context: BuildContext) -> MathAnswerReward:
    return MathAnswerReward(name=section.label, extractors=tuple(section.extractors))


def build_choice(section: ChoiceRewardConfig, context: BuildContext) -> ChoiceAnswerReward:
    return ChoiceAnswerReward(name=section.label)


def build_format(section: FormatRewardConfig, context: BuildContext) -> FormatReward:
    tag = section.think_tag
    return FormatReward(
        name=section.label, think_open=f"<{tag}>", think_close=f"</{tag}>", pattern=section.pattern
    )


def build_length(section: LengthRewardConfig, context: BuildContext) -> LengthReward:
    max_length = section.max_length or context.config.rollout.max_new_tokens
    return LengthReward(
        max_length=max_length,
        cache_length=section.buffer or max(1, max_length // 4),
        factor=section.factor,
        name=section.label,
    )


def build_python(section: PythonRewardConfig, context: BuildContext) -> PythonFunctionReward:
    return PythonFunctionReward(
        section.function,
        name=section.label,
        timeout_seconds=section.timeout_s,
        convention=section.convention,
    )


def build_ttrl(section: MajorityVoteRewardConfig, context: BuildContext) -> MajorityVoteReward:
    return MajorityVoteReward(
        MathAnswerGrader(tuple(section.extractors)),
        name=section.label,
        agree_score=section.agree_score,
        disagree_score=section.disagree_score,
        min_share=section.min_share,
    )


def build_think_boxed(section: ThinkBoxedRuleConfig, context: BuildContext) -> ThinkBoxedRule:
    return ThinkBoxedRule(name=section.label, format_weight=section.format_weight)


def build_answer_tag(section: AvqaRuleConfig, context: BuildContext) -> AnswerTagRule:
    return AnswerTagRule(name=section.label)


def build_judge_agreement(
    section: JudgeAgreementConfig, context: BuildContext
) -> JudgeAgreementReward:
    return JudgeAgreementReward(
        name=section.label,
        labels=tuple(section.labels),
        format_weight=section.format_weight,
        think_tag=section.think_tag,
        verdict=section.verdict,
    )


def build_rewards(context: BuildContext) -> list[RewardSource]:
    """One reward source per ``reward.sources`` section, from its registered builder, then
    one per source of the reward recipes not among them (when rows carry labels)."""
    sections = [*context.config.reward.sources, *recipe_sections(context.config)]
    return [build(REWARD_SOURCES, section, context) for section in sections]
