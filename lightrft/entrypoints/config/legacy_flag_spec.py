"""What one flag of the original LightRFT (or OpenRLHF) is: how its value is read and what it
sets here. The table of every flag is :mod:`lightrft.entrypoints.config.legacy_flag_table`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Kind(Enum):
    """How a flag's value is read: literally, as the original's argparse type reads it."""

    STR = "text"
    INT = "integer"
    FLOAT = "number"
    SWITCH = "switch"
    PAIR = "two numbers"
    WORDS = "words"  # nargs='*': the words up to the next flag
    OPTIONAL_STR = "text or nothing"  # --use_wandb alone, or --use_wandb KEY


# the short names the flag tables are written with
STR, INT, FLOAT, SWITCH, PAIR, WORDS = (
    Kind.STR,
    Kind.INT,
    Kind.FLOAT,
    Kind.SWITCH,
    Kind.PAIR,
    Kind.WORDS,
)


class Status(Enum):
    MAPPED = "mapped"
    NOOP = "no-op"
    REFUSED = "refused"


@dataclass(frozen=True)
class Flag:
    """One flag.

    ``keys``: the config keys it sets (what the docs table shows; also what a plain flag sets
    to its value, each key to ``value(read value)``); ``$NAME``: an environment variable.
    ``under``: keys set to the same value under the config file (the evaluation set's copy
    of a training-set setting: a file's ``data.eval: null`` still disables evaluation). ``rule``: the name of a rule in
    :mod:`~lightrft.entrypoints.config.legacy_rules` that reads it with other flags instead
    (the keys are then what that rule may set; ``refused``: when the rule refuses it). ``noop``: accepted, nothing set (``note``
    says why that is honest). ``refused``: the missing capability, one line. ``accept``:
    a test of the read value; when it fails, the flag is refused with ``refused``.
    ``implied``: settings applied under the config file (what the flag implies in the
    original). ``origin``: whose flag it is."""

    kind: Kind
    keys: tuple[str, ...] = ()
    under: tuple[str, ...] = ()
    value: Callable[[Any], Any] | None = None
    rule: str | None = None
    noop: bool = False
    refused: str | None = None
    accept: Callable[[Any], bool] | None = None
    implied: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    origin: str = "LightRFT"

    @property
    def status(self) -> Status:
        if self.refused is not None and self.accept is None and self.rule is None:
            return Status.REFUSED
        return Status.MAPPED if self.keys else Status.NOOP

    @property
    def conditional(self) -> bool:
        """Refused for some values or with some other flags only."""
        return self.refused is not None and self.status is not Status.REFUSED


def sets(*keys: str, value: Callable[[Any], Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Keyword arguments of a :class:`Flag` that sets ``keys`` (to ``value(read value)``)."""
    return {"keys": keys, "value": value, **kw}


def both(name: str, **kw: Any) -> dict[str, Any]:
    """Keyword arguments of a :class:`Flag` that sets the key ``name`` of the training set,
    and of the evaluation set under the config file (the original reads both sets with the
    same columns and prompt settings)."""
    return sets(f"data.train.{name}", under=(f"data.eval.{name}",), **kw)


UNSET = object()
"""What a value transform returns for "set nothing" (a switch turned off)."""


def const(setting: Any) -> Callable[[Any], Any]:
    """A switch's setting when on (turned off: nothing is set; other text: that text)."""
    return lambda on: setting if on is True else (UNSET if on is False else on)


def positive_or_none(value: Any) -> Any:
    """The original's ``0`` / ``0.0`` (and ``-1``) for "off" is this project's ``None``."""
    return value if value > 0 else None


def zero_is(value: Any) -> Callable[[Any], bool]:
    """``accept``: only ``value`` (the original's "off") is accepted."""
    return lambda read: read == value
