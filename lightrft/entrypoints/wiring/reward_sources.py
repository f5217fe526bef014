"""Built-in reward source builders (``reward.sources``)."""

from __future__ import annotations

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
from lightrft.entrypoints.config.reward_configs import (
    AvqaRuleConfig,
    ChoiceRewardConfig,
    FormatRewardConfig,
    LengthRewardConfig,
    MajorityVoteRewardConfig,
    MathRewardConfig,
    PythonRewardConfig,
    ThinkBoxedRuleConfig,
)
from lightrft.entrypoints.wiring.registries import REWARD_SOURCES, BuildContext


@REWARD_SOURCES.register("math")
def build_math(section: MathRewardConfig, context: BuildContext) -> MathAnswerReward:
    return MathAnswerReward(name=section.label, extractors=tuple(section.extractors))


@REWARD_SOURCES.register("choice")
def build_choice(section: ChoiceRewardConfig, context: BuildContext) -> ChoiceAnswerReward:
    return ChoiceAnswerReward(name=section.label)


@REWARD_SOURCES.register("format")
def build_format(section: FormatRewardConfig, context: BuildContext) -> FormatReward:
    tag = section.think_tag
    return FormatReward(
        name=section.label, think_open=f"<{tag}>", think_close=f"</{tag}>", pattern=section.pattern
    )


@REWARD_SOURCES.register("length")
def build_length(section: LengthRewardConfig, context: BuildContext) -> LengthReward:
    max_length = section.max_length or context.config.rollout.max_new_tokens
    return LengthReward(
        max_length=max_length,
        cache_length=section.buffer or max(1, max_length // 4),
        factor=section.factor,
        name=section.label,
    )


@REWARD_SOURCES.register("python")
def build_python(section: PythonRewardConfig, context: BuildContext) -> PythonFunctionReward:
    return PythonFunctionReward(
        section.function,
        name=section.label,
        timeout_seconds=section.timeout_s,
        convention=section.convention,
    )


@REWARD_SOURCES.register("ttrl")
def build_ttrl(section: MajorityVoteRewardConfig, context: BuildContext) -> MajorityVoteReward:
    return MajorityVoteReward(
        MathAnswerGrader(tuple(section.extractors)),
        name=section.label,
        agree_score=section.agree_score,
        disagree_score=section.disagree_score,
        min_share=section.min_share,
    )


@REWARD_SOURCES.register("gsm8k_rule")
@REWARD_SOURCES.register("geo3k_rule")
def build_think_boxed(section: ThinkBoxedRuleConfig, context: BuildContext) -> ThinkBoxedRule:
    return ThinkBoxedRule(name=section.label, format_weight=section.format_weight)


@REWARD_SOURCES.register("avqa_rule")
def build_answer_tag(section: AvqaRuleConfig, context: BuildContext) -> AnswerTagRule:
    return AnswerTagRule(name=section.label)
