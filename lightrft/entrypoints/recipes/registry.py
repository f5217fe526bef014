"""The demo recipes of ``lightrft demo NAME``: each recipe module declares one
:class:`DemoRecipe` (its name, its own command-line flags, its run function) as ``RECIPE``,
and :data:`RECIPE_MODULES` lists the modules :func:`load_recipes` registers.

A recipe of another package registers the same way: its module defines ``RECIPE`` and is
passed to :func:`load_recipes` with the built-in ones (a duplicate name is refused).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from lightrft.domain.registry import Registry

RECIPE_MODULES: tuple[str, ...] = (
    "lightrft.entrypoints.recipes.demo",
    "lightrft.entrypoints.recipes.ttrl",
    "lightrft.entrypoints.recipes.rlhf",
    "lightrft.entrypoints.recipes.safe",
    "lightrft.entrypoints.recipes.agent",
    "lightrft.entrypoints.recipes.distill",
    "lightrft.entrypoints.recipes.prm",
)
"""The built-in recipes' modules."""

DEFAULT_RECIPE = "grpo"
"""What ``lightrft demo`` runs when no recipe is named: the main job."""


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``add_arguments`` of a recipe whose only settings are ``key=value`` overrides."""


@dataclass(frozen=True)
class DemoRecipe:
    """One ``lightrft demo NAME``.

    ``add_arguments(parser)`` adds the recipe's own flags; ``run(args, overrides)`` runs it
    with the parsed flags (plus ``args.argv``, the command line as typed) and the
    ``key=value`` overrides, and returns the exit status."""

    name: str
    help: str
    run: Callable[[argparse.Namespace, list[str]], int]
    add_arguments: Callable[[argparse.ArgumentParser], None] = no_arguments


def load_recipes(modules: tuple[str, ...] = RECIPE_MODULES) -> Registry[DemoRecipe]:
    """The recipes of ``modules`` (each module's ``RECIPE``) by name."""
    recipes: Registry[DemoRecipe] = Registry("demo recipe")
    for name in modules:
        recipe = importlib.import_module(name).RECIPE
        recipes.add(recipe.name, recipe)
    return recipes
