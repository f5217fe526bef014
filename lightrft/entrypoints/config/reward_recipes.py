"""Reward recipes by row label (``reward.recipes``): the built-in ones, their checks, and the
:class:`~lightrft.domain.reward_recipes.RecipeBook` a run scores with.

Recipes apply once rows can carry labels: ``data.train.label_key`` or ``data.eval.label_key``
is set, or ``reward.recipes`` is. Otherwise nothing here changes a run: ``reward.sources``
scores every row. A source is named by its label (``name``, else its type); the same name in
``reward.sources`` and in recipes is one source, loaded once, so its settings must agree
(only ``weight`` and ``gate_threshold`` may differ from recipe to recipe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.domain.reward_recipes import DEFAULT_RECIPE, RecipeBook, RewardRecipe
from lightrft.entrypoints.config.components import ComponentSection, RewardSourceSection
from lightrft.entrypoints.config.reward_configs import (
    AvqaRuleConfig,
    Geo3kRuleConfig,
    Gsm8kRuleConfig,
)

BUILTIN_RECIPES: dict[str, tuple[RewardSourceSection, ...]] = {
    "gsm8k_rule": (Gsm8kRuleConfig.model_validate({}),),
    "geo3k_rule": (Geo3kRuleConfig.model_validate({}),),
    "avqa_rule": (AvqaRuleConfig.model_validate({}),),
}
"""The original LightRFT's recipes, available without configuration (``reward.recipes``
entries of the same label replace them)."""

_PER_RECIPE = {"weight", "gate_threshold"}  # what may differ between uses of one source


def all_recipes(
    recipes: Mapping[str, Sequence[ComponentSection]],
) -> dict[str, tuple[RewardSourceSection, ...]]:
    """The built-in recipes updated with the configured ones."""
    configured = {label: _typed(sections) for label, sections in recipes.items()}
    return {**BUILTIN_RECIPES, **configured}


def check_recipes(
    sources: Sequence[RewardSourceSection], recipes: Mapping[str, Sequence[ComponentSection]]
) -> None:
    """``ValueError`` naming the key: an empty recipe, ``default`` as a label, a name used
    twice in a recipe, or one name configured two ways."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for source in sources:
        seen.setdefault(source.label, ("reward.sources", _settings(source)))
    for label, sections in all_recipes(recipes).items():
        where = f"reward.recipes.{label}"
        if label == DEFAULT_RECIPE:
            raise ValueError(f"{where}: '{DEFAULT_RECIPE}' names reward.sources; use another label")
        if not sections:
            raise ValueError(f"{where} is empty; give it at least one reward source")
        names = [s.label for s in sections]
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: source names must be unique, got {names}")
        for section in sections:
            settings = _settings(section)
            first, known = seen.setdefault(section.label, (where, settings))
            if known != settings:
                raise ValueError(
                    f"{where}: source {section.label!r} is configured differently in {first} "
                    "(only weight and gate_threshold may differ); give one of them another name"
                )


def routes_by_label(run: Any) -> bool:
    """Whether rows may carry labels in ``run`` (a ``RunConfig``): recipes then apply."""
    eval_set = run.data.eval
    labelled = run.data.train.label_key is not None or (
        eval_set is not None and eval_set.label_key is not None
    )
    return labelled or bool(run.reward.recipes)


def recipe_sections(run: Any) -> list[RewardSourceSection]:
    """The sources of the recipes that ``reward.sources`` does not hold, once each (none
    when recipes do not apply)."""
    if not routes_by_label(run):
        return []
    known = {s.label for s in run.reward.typed_sources}
    extra: dict[str, RewardSourceSection] = {}
    for sections in all_recipes(run.reward.recipes).values():
        for section in sections:
            if section.label not in known:
                extra.setdefault(section.label, section)
    return list(extra.values())


def recipe_book(run: Any) -> RecipeBook | None:
    """The recipes a run scores with (None when they do not apply: reward.sources only)."""
    if not routes_by_label(run):
        return None
    reward = run.reward
    return RecipeBook(
        recipes={
            label: _recipe(sections) for label, sections in all_recipes(reward.recipes).items()
        },
        default=_recipe(reward.typed_sources),
        unknown_label=reward.unknown_label,
    )


def _recipe(sections: Sequence[RewardSourceSection]) -> RewardRecipe:
    return RewardRecipe(
        weights={s.label: s.weight for s in sections},
        gates={s.label: s.gate_threshold for s in sections if s.gate_threshold is not None},
    )


def _typed(sections: Sequence[ComponentSection]) -> tuple[RewardSourceSection, ...]:
    return tuple(s for s in sections if isinstance(s, RewardSourceSection))


def _settings(section: RewardSourceSection) -> dict[str, Any]:
    return section.model_dump(exclude={*_PER_RECIPE, "name"})
