"""Continuing a demo run: ``lightrft demo [NAME] --resume``.

A demo run again starts over (its recipe sets ``logging.overwrite=true``: the previous run
moves to ``RUN.old-<UTC time>``). When the user asks to resume (``--resume``,
``--resume=auto``, ``checkpoint.resume=...``), that default yields: the recipe's
``overwrite`` is dropped, so the run continues from its newest intact checkpoint under the
same resume checks as ``lightrft train``. A user who also passes ``logging.overwrite=true``
gets the contradiction refused, as ``train`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.entrypoints.config.loading import read_command_line

OVERWRITE = "logging.overwrite"


def resumes(user: Sequence[str]) -> bool:
    """Whether the user's words ask to resume (a flag or ``checkpoint.resume``)."""
    value = read_command_line(list(user)).overrides.get("checkpoint.resume", False)
    return value is True or value == "auto"


def with_start_choice(recipe: Sequence[str], user: Sequence[str]) -> list[str]:
    """``recipe`` then ``user``, the recipe's ``logging.overwrite`` left out when the user
    resumes (see the module docstring)."""
    if resumes(user):
        recipe = [word for word in recipe if not word.startswith(f"{OVERWRITE}=")]
    return [*recipe, *user]
