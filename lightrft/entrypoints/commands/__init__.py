"""The `lightrft` subcommands: one module each, listed in :data:`COMMAND_MODULES`.

A command module defines ``NAME`` (the subcommand), ``HELP`` (one line),
``add_parser(parser)`` (its own arguments on the subparser made for it) and
``run(args, rest) -> int`` (``rest``: the unparsed ``key=value`` overrides). A command holds
arguments only: ``run`` builds the config or options and calls the verb's job in
:mod:`lightrft.entrypoints.jobs` (or a recipe of :mod:`lightrft.entrypoints.recipes`),
imported inside ``run`` so the module's top level stays light.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from lightrft.domain.registry import Registry

COMMAND_MODULES: tuple[str, ...] = (
    "lightrft.entrypoints.commands.train",
    "lightrft.entrypoints.commands.eval",
    "lightrft.entrypoints.commands.config_show",
    "lightrft.entrypoints.commands.report",
    "lightrft.entrypoints.commands.demo",
    "lightrft.entrypoints.commands.sft",
    "lightrft.entrypoints.commands.samples",
    "lightrft.entrypoints.commands.checkpoints",
    "lightrft.entrypoints.commands.rm",
    "lightrft.entrypoints.commands.serve_reward",
)


def load_commands(modules: tuple[str, ...] = COMMAND_MODULES) -> Registry[ModuleType]:
    """The command modules by subcommand name (a duplicate name is refused)."""
    commands: Registry[ModuleType] = Registry("command")
    for name in modules:
        module = importlib.import_module(name)
        commands.add(module.NAME, module)
    return commands
