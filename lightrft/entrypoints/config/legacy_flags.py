"""The flags of LightRFT's (and OpenRLHF's) training scripts, read as config settings.

A command line is dotted ``key=value`` overrides plus these flags (``--name value``,
``--name=value``, ``--switch``). :func:`read_args` turns it into a :class:`CommandLine`:

- ``overrides``: settings applied over the config file, like ``key=value``;
- ``implied``: what a flag implies in the original, applied under the config file (so a
  file or an explicit override still decides): ``--adam_offload`` alone means DeepSpeed (the
  original's default backend), ``--engine_mem_util`` a vLLM engine (its default engine);
- ``global_sizes``: the original's global batch sizes (``--rollout_batch_size``,
  ``--train_batch_size``: all ranks together), divided by the number of ranks into this
  project's per-rank keys once the config says how many ranks there are;
- ``environment``: variables the run's process takes (W&B's key, run name, group).

What each flag means is the table :mod:`~lightrft.entrypoints.config.legacy_flag_table`
(docs/migrating.md shows it). A flag's value is read literally, with the original's type
(a text flag stays the text typed). Every problem of a command line is reported together,
one line each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.entrypoints.config.legacy_flag_spec import UNSET, Flag, Kind
from lightrft.entrypoints.config.legacy_flag_table import FLAGS
from lightrft.entrypoints.config.legacy_rules import RULES, CommandLine, Reading, Rule

__all__ = ["CommandLine", "FlagError", "known_flags", "read_args"]

BOOL_WORDS = {"true": True, "on": True, "yes": True, "false": False, "off": False, "no": False}


class FlagError(ValueError):
    """Flags that cannot be read: one line per problem."""


def known_flags() -> list[str]:
    """Every flag :func:`read_args` knows, sorted."""
    return sorted(FLAGS)


UNKNOWN_HINT = (
    "not a flag of the original LightRFT or OpenRLHF; use dotted key=value overrides "
    "(`lightrft config show` lists the keys; docs/migrating.md the flags)"
)


def read_args(
    args: Sequence[str],
    parse_value: Any,
    *,
    table: Mapping[str, Flag] = FLAGS,
    rules: Mapping[str, Rule] = RULES,
    unknown_hint: str = UNKNOWN_HINT,
) -> CommandLine:
    """Reads ``key=value`` pairs (``parse_value`` turns a value's text into a value: YAML
    rules) and flags (their values literally). Raises :class:`FlagError` listing every
    problem. ``table`` / ``rules``: another command's flags (``rm train``'s) and rules."""
    reading = Reading()
    values: dict[str, Any] = {}
    order: list[tuple[str, Any]] = []  # flags and overrides as typed (later wins)
    unknown: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if not arg.startswith("--"):
            if "=" not in arg:
                reading.problems.append(
                    f"cannot read argument {arg!r}: expected key=value or --flag"
                )
                continue
            key, _, raw = arg.partition("=")
            order.append(("=", (key.strip(), parse_value(raw))))
            continue
        name, sep, text = arg[2:].partition("=")
        name = name.replace("-", "_")
        flag = table.get(name)
        if flag is None:
            unknown.append(f"--{name}")
            if not sep and i < len(items) and not items[i].startswith("--") and "=" not in items[i]:
                i += 1  # its value
            continue
        words: list[str] = [text] if sep else []
        if not sep:
            i = _take_words(flag.kind, items, i, words)
        try:
            value = _read_value(flag.kind, words)
        except ValueError as exc:
            reading.refuse(name, str(exc))
            continue
        values[name] = value
        order.append((name, value))
    if unknown:
        reading.problems.insert(
            0,
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: "
            + unknown_hint,
        )
    _apply(values, order, reading, table, rules)
    if reading.problems:
        raise FlagError("\n".join(reading.problems))
    return CommandLine(
        overrides=reading.overrides,
        implied=reading.implied,
        global_sizes=reading.global_sizes,
        environment=reading.environment,
    )


def _take_words(kind: Kind, items: list[str], at: int, words: list[str]) -> int:
    """Appends the value words of a flag given as ``--name value ...``; returns the next index.
    A word starting with ``--`` is the next flag (a negative number is a value)."""

    def is_value(j: int) -> bool:
        return j < len(items) and (not items[j].startswith("--") or _is_number(items[j]))

    if kind is Kind.SWITCH:
        if is_value(at) and items[at].lower() in BOOL_WORDS:
            words.append(items[at])
            return at + 1
        return at
    if kind is Kind.OPTIONAL_STR:
        if is_value(at) and "=" not in items[at]:
            words.append(items[at])
            return at + 1
        return at
    count = {Kind.PAIR: 2, Kind.WORDS: len(items)}.get(kind, 1)
    while count and is_value(at):
        words.append(items[at])
        at, count = at + 1, count - 1
    return at


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_value(kind: Kind, words: list[str]) -> Any:
    if kind is Kind.SWITCH:
        if not words:
            return True
        if words[0].lower() in BOOL_WORDS:
            return BOOL_WORDS[words[0].lower()]
        return words[0]  # --resume=auto
    if kind is Kind.OPTIONAL_STR:
        return words[0] if words else True
    if not words:
        raise ValueError(f"expected {'a value' if kind is not Kind.PAIR else 'two numbers'}")
    if kind is Kind.STR:
        return words[0]
    if kind is Kind.WORDS:
        return list(words)
    if kind is Kind.PAIR:
        if len(words) != 2:
            raise ValueError(f"expected two numbers (got {' '.join(words)!r})")
        return [_number(w, float) for w in words]
    return _number(words[0], int if kind is Kind.INT else float)


def _number(text: str, kind: type) -> Any:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(
            f"expected a {'whole ' if kind is int else ''}number (got {text!r})"
        ) from None
    if kind is int:
        if number != int(number):
            raise ValueError(f"expected a whole number (got {text!r})")
        return int(number)
    return number


def _apply(
    values: dict[str, Any],
    order: list[tuple[str, Any]],
    reading: Reading,
    table: Mapping[str, Flag] = FLAGS,
    rules: Mapping[str, Rule] = RULES,
) -> None:
    """The plain flags in the order typed, the rules of the rest, then the dotted overrides."""
    used: list[str] = []
    for name, value in order:
        if name != "=":
            flag = table[name]
            _apply_flag(name, flag, value, reading)
            if flag.rule is not None and flag.rule not in used:
                used.append(flag.rule)
    for rule in used:
        rules[rule](values, reading)
    for name, value in order:  # a dotted key=value wins over every flag
        if name == "=":
            key, parsed = value
            reading.overrides.pop(key, None)
            reading.overrides[key] = parsed


def _apply_flag(name: str, flag: Flag, value: Any, reading: Reading) -> None:
    if flag.rule is not None:  # read with other flags by its rule
        if value is not False and flag.implied:
            reading.implied.update(flag.implied)
        return
    if flag.accept is not None and not flag.accept(value):
        shown = "" if value is True else f"{value!r}: "
        reading.refuse(name, f"{shown}{flag.refused}")
        return
    if flag.refused is not None and flag.accept is None:
        reading.refuse(name, f"no counterpart here: {flag.refused}")
        return
    setting = flag.value(value) if flag.value is not None else value
    if setting is UNSET:
        return
    for key in flag.keys:
        reading.overrides[key] = setting
    for key in flag.under:
        reading.implied[key] = setting
    if value is not False:
        reading.implied.update(flag.implied)
