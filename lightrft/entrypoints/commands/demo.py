"""`lightrft demo [NAME] [flags] [key=value ...]`: the built-in demos on the embedded
SmolLM2-135M-Instruct, sized for a 2-core CPU. Without NAME, the main job (GRPO, about 3-4
minutes idle; held-out greedy accuracy before and after).

The recipes are registered in :mod:`lightrft.entrypoints.recipes.registry`: each declares its
name, its own flags and its run function in its own module of ``recipes/``. This command
finds the recipe's name among the words, parses the rest with that recipe's flags and hands
it the ``key=value`` overrides; ``lightrft demo NAME --help`` shows a recipe's flags.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from lightrft.entrypoints.commands.resume_flags import add_resume_changing, with_stated_keys

if TYPE_CHECKING:
    from lightrft.domain.registry import Registry
    from lightrft.entrypoints.recipes.registry import DemoRecipe

NAME = "demo"
HELP = (
    "the main jobs on the embedded model: GRPO by default, or a recipe by name "
    "('lightrft demo --help' lists them, 'lightrft demo NAME --help' shows a recipe's flags)"
)


def add_parser(parser: argparse.ArgumentParser) -> None:
    """Only what every recipe shares; the recipe's own flags are parsed in :func:`run`, once
    its name is known (so ``--help`` is read there too)."""
    # -h/--help replaces this parser's own: run() prints the named recipe's help
    shared = parser.add_argument_group("every recipe", conflict_handler="resolve")
    shared.add_argument("-h", "--help", action="store_true", help="show the recipe's help")
    add_resume_changing(parser)


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.recipes.registry import load_recipes

    recipes = load_recipes()
    parsers = {name: recipe_parser(recipes.get(name), recipes) for name in recipes.names()}
    name, words = recipe_word(rest, recipes, parsers)
    parser = parsers[recipes.canonical(name)]
    if getattr(args, "help", False):
        parser.print_help()
        parser.exit()
    recipe_args, overrides = parser.parse_known_args(words)
    _refuse_other_recipes_flags(parser, overrides, parsers)
    recipe_args.argv = args.argv
    recipe_args.resume_changing = [*args.resume_changing, *recipe_args.resume_changing]
    return recipes.get(name).run(recipe_args, with_stated_keys(recipe_args, overrides))


def recipe_parser(recipe: DemoRecipe, recipes: Registry[DemoRecipe]) -> argparse.ArgumentParser:
    """The recipe's own flags (and ``--resume-changing``, which every recipe takes)."""
    from lightrft.entrypoints.recipes.registry import DEFAULT_RECIPE

    default = recipe.name == DEFAULT_RECIPE
    listing = ", ".join(f"{n} (default)" if n == DEFAULT_RECIPE else n for n in recipes.names())
    parser = argparse.ArgumentParser(
        prog="lightrft demo" if default else f"lightrft demo {recipe.name}",
        description=recipe.help,
        epilog=f"recipes: {listing}; 'lightrft demo NAME --help' shows a recipe's flags. "
        "key=value arguments override the recipe's settings.",
    )
    recipe.add_arguments(parser)
    add_resume_changing(parser)
    return parser


def recipe_word(
    rest: list[str], recipes: Registry[DemoRecipe], parsers: dict[str, argparse.ArgumentParser]
) -> tuple[str, list[str]]:
    """The recipe named in ``rest`` and the words without its name. The name is the first word
    that is neither a recipe's flag nor a flag's value (flags may come before it, as in
    ``demo --run-dir D rlhf``); a ``key=value`` word or another flag there (a legacy one)
    means no name: the default recipe. A bare word that names no recipe is refused, with the
    registered names."""
    from lightrft.entrypoints.recipes.registry import DEFAULT_RECIPE

    values = {
        flag: action.nargs if isinstance(action.nargs, int) else 1
        for parser in parsers.values()
        for action in parser._actions
        for flag in action.option_strings
    }
    index = 0
    while index < len(rest):
        word = rest[index]
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            if flag not in values:
                break
            index += 1 if "=" in word else 1 + values[flag]
            continue
        if "=" in word:
            break
        recipes.get(word)  # an unknown name is refused, naming the registered ones
        return word, [*rest[:index], *rest[index + 1 :]]
    return DEFAULT_RECIPE, list(rest)


def _refuse_other_recipes_flags(
    parser: argparse.ArgumentParser,
    overrides: list[str],
    parsers: dict[str, argparse.ArgumentParser],
) -> None:
    """A flag of another recipe is an error naming whose it is, not a silent no-op."""
    for word in overrides:
        flag = word.split("=", 1)[0]
        owners = [n for n, p in parsers.items() if flag in p._option_string_actions]
        if word.startswith("-") and owners:
            parser.error(f"{flag} is a flag of 'lightrft demo {owners[0]}', not of this recipe")
