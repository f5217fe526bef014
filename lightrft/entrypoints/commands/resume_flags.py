"""``--resume-changing KEY [KEY ...]``: the flag of every command that resumes a run
(``train``, ``demo``, ``sft``, ``rm train``); a helper module, not a command."""

from __future__ import annotations

import argparse

FLAG_HELP = (
    "on --resume: keys that may differ from the run's recorded settings (e.g. optim.lr); "
    "the change is recorded in RUN_DIR/history.jsonl, any other change is refused"
)


def add_resume_changing(parser: argparse.ArgumentParser) -> None:
    """Adds the flag. Abbreviations are turned off: ``--resume`` (an override the command
    passes on) must not read as a short form of ``--resume-changing``."""
    parser.allow_abbrev = False
    parser.add_argument("--resume-changing", nargs="+", metavar="KEY", default=[], help=FLAG_HELP)


def stated_keys(args: argparse.Namespace) -> list[str]:
    """The keys given to ``--resume-changing`` (words with ``=`` are overrides, see
    :func:`with_stated_keys`)."""
    return [word for word in args.resume_changing if "=" not in word]


def with_stated_keys(args: argparse.Namespace, rest: list[str]) -> list[str]:
    """``rest`` plus ``checkpoint.resume_changing=[...]``; ``key=value`` words that followed
    the keys (argparse gave them to the flag) go back to the overrides."""
    spilled = [word for word in args.resume_changing if "=" in word]
    keys = stated_keys(args)
    stated = [f"checkpoint.resume_changing=[{', '.join(keys)}]"] if keys else []
    return [*rest, *spilled, *stated]
