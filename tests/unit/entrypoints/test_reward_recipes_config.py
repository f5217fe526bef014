"""reward.recipes / reward.unknown_label: built-in gsm8k_rule, geo3k_rule, avqa_rule; recipes only
once rows can carry labels, each source built once, and what the checks refuse."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lightrft.adapters.rewards import (
    AnswerTagRule,
    FormatReward,
    MathAnswerReward,
    ThinkBoxedRule,
)
from lightrft.domain.reward_recipes import RewardRecipe
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.reward_recipes import recipe_book
from lightrft.entrypoints.wiring.registries import BuildContext
from lightrft.entrypoints.wiring.reward_sources import build_rewards

MIX = "reward.recipes={mix: [{type: math, name: boxed_math, extractors: [boxed]}, format]}"


def built(*overrides: str) -> dict[str, object]:
    config = load_config(None, list(overrides))
    context = BuildContext(config, Path("."), torch.device("cpu"), None, lambda: None)  # type: ignore[arg-type,return-value]
    sources = build_rewards(context)
    names = [s.name for s in sources]
    assert len(set(names)) == len(names)  # each source once
    return dict(zip(names, sources, strict=True))


def test_without_labels_a_run_scores_as_before() -> None:
    config = load_config(None, [])
    assert recipe_book(config) is None and config.to_domain().shaping.recipes is None
    assert list(built()) == ["math"]


def test_a_label_key_brings_the_built_in_recipes() -> None:
    config = load_config(None, ["data.train.label_key=label"])
    book = config.to_domain().shaping.recipes
    assert book is not None and book.unknown_label == "error"
    assert book.recipes == {
        "gsm8k_rule": RewardRecipe({"gsm8k_rule": 1.0}),
        "geo3k_rule": RewardRecipe({"geo3k_rule": 1.0}),
        "avqa_rule": RewardRecipe({"avqa_rule": 1.0}),
    }
    assert book.default == RewardRecipe({"math": 1.0})  # reward.sources
    sources = built("data.eval.label_key=label")
    assert list(sources) == ["math", "gsm8k_rule", "geo3k_rule", "avqa_rule"]
    assert isinstance(sources["avqa_rule"], AnswerTagRule)
    rule = sources["gsm8k_rule"]
    assert isinstance(rule, ThinkBoxedRule) and rule.format_weight == 0.1


def test_configured_recipes_share_sources_with_reward_sources() -> None:
    overrides = [
        "data.train.label_key=label",
        "reward.sources=[math, {type: format, weight: 0.2, gate_threshold: 1}]",
        MIX,
        "reward.unknown_label=default",
    ]
    book = recipe_book(load_config(None, overrides))
    assert book is not None and book.unknown_label == "default"
    assert book.recipes["mix"] == RewardRecipe({"boxed_math": 1.0, "format": 1.0})
    assert book.default == RewardRecipe({"math": 1.0, "format": 0.2}, gates={"format": 1.0})
    sources = built(*overrides)
    assert list(sources) == [
        "math",
        "format",
        "gsm8k_rule",
        "geo3k_rule",
        "avqa_rule",
        "boxed_math",
    ]
    assert isinstance(sources["format"], FormatReward)  # one source for both uses
    assert isinstance(sources["boxed_math"], MathAnswerReward)
    assert sources["boxed_math"].extractors == ("boxed",)  # type: ignore[attr-defined]


def test_a_recipe_may_replace_a_built_in_one() -> None:
    overrides = ["reward.recipes={gsm8k_rule: [{type: gsm8k_rule, format_weight: 0.2}]}"]
    book = recipe_book(load_config(None, overrides))  # recipes set: labels apply
    assert book is not None and book.recipes["gsm8k_rule"] == RewardRecipe({"gsm8k_rule": 1.0})
    assert built(*overrides)["gsm8k_rule"].format_weight == 0.2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("recipes", "message"),
    [
        ("{mix: []}", r"reward\.recipes\.mix is empty"),
        ("{default: [math]}", r"'default' names reward\.sources"),
        ("{mix: [math, {type: math, weight: 2}]}", "source names must be unique"),
        ("{mix: [{type: math, extractors: [boxed]}]}", r"'math' is configured differently in "
         r"reward\.sources"),
        ("{mix: [{type: nope}]}", "unknown reward source type 'nope'"),
    ],
)  # fmt: skip
def test_recipes_that_cannot_work_are_refused(recipes: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(None, [f"reward.recipes={recipes}"])


def test_unknown_label_takes_error_or_default_only() -> None:
    with pytest.raises(ValueError, match="unknown_label"):
        load_config(None, ["reward.unknown_label=skip"])
