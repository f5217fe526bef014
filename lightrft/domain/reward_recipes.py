"""Reward recipes by row label: which weighted reward sources score which prompt.

A prompt may carry a label (``PromptRecord.metadata[LABEL_KEY]``, e.g. ``"gsm8k_rule"``,
read from the data by ``data.*.label_key``). A :class:`RecipeBook` maps labels to recipes,
each a weighted list of reward-source names with optional gates; a prompt without a label
takes the book's default recipe, and a label the book does not hold is an error naming it
(``unknown_label="error"``) or takes the default too (``"default"``). Pure: names only, the
sources themselves are the application's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

LABEL_KEY = "label"
"""``PromptRecord.metadata`` key of the prompt's recipe label."""

DEFAULT_RECIPE = "default"
"""The name the default recipe goes by in routes and metrics (not a label of its own)."""

UnknownLabelPolicy = Literal["error", "default"]


class UnknownLabelError(ValueError):
    """A prompt whose label names no recipe (under ``unknown_label="error"``)."""


@dataclass(frozen=True)
class RewardRecipe:
    """Source name -> weight (their weighted sum is the reward), and source name -> gate
    threshold (a sample scoring below it from that source gets the gate value instead)."""

    weights: Mapping[str, float]
    gates: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.weights:
            raise ValueError("a reward recipe needs at least one source")
        for name, weight in self.weights.items():
            if not math.isfinite(weight):
                raise ValueError(f"recipe weight of {name!r} must be finite, got {weight}")
        outside = sorted(set(self.gates) - set(self.weights))
        if outside:
            raise ValueError(f"recipe gates {outside} name no source of the recipe")


@dataclass(frozen=True)
class RecipeBook:
    """Recipes by label, the default recipe and what an unknown label does."""

    recipes: Mapping[str, RewardRecipe]
    default: RewardRecipe
    unknown_label: UnknownLabelPolicy = "error"

    def __post_init__(self) -> None:
        if self.unknown_label not in ("error", "default"):
            raise ValueError(f"unknown_label must be error or default, got {self.unknown_label!r}")
        if DEFAULT_RECIPE in self.recipes:
            raise ValueError(f"{DEFAULT_RECIPE!r} names the default recipe, not a label")

    def sources(self) -> set[str]:
        """Every source name some recipe (or the default) uses."""
        names = set(self.default.weights)
        for recipe in self.recipes.values():
            names |= set(recipe.weights)
        return names

    def recipe(self, route: str) -> RewardRecipe:
        """The recipe a route (a label, or :data:`DEFAULT_RECIPE`) stands for."""
        return self.default if route == DEFAULT_RECIPE else self.recipes[route]

    def route(self, label: str | None, prompt: str = "a prompt") -> str:
        """The recipe of a prompt labelled ``label`` (None or empty: unlabelled, the default);
        :class:`UnknownLabelError` for an unknown label under ``"error"``."""
        if label is None or label == "":
            return DEFAULT_RECIPE
        if label in self.recipes:
            return label
        if self.unknown_label == "default":
            return DEFAULT_RECIPE
        raise UnknownLabelError(
            f"{prompt} has label {label!r}, which names no reward recipe (known: "
            f"{', '.join(sorted(self.recipes))}); add it to reward.recipes or set "
            "reward.unknown_label=default to score it with reward.sources"
        )


def label_of(metadata: Mapping[str, Any]) -> str | None:
    """The recipe label a prompt's metadata holds (None: unlabelled)."""
    label = metadata.get(LABEL_KEY)
    return None if label is None else str(label)
