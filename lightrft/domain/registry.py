"""A small generic name -> value registry.

Every algorithm family (advantage estimators, policy losses, KL estimators, aggregation
modes) is one ``Registry`` instance. The names are the strings users type in a config.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownChoiceError(KeyError, ValueError):
    """Raised for a name that is not registered; the message lists the valid choices."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence.
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names (and aliases) to values of one kind.

    ``register(name, aliases=...)`` refuses duplicates; ``get(name)`` resolves aliases and
    names the valid choices when the name is unknown.
    """

    def __init__(self, kind: str, *, builtin_modules: tuple[str, ...] = ()) -> None:
        """``builtin_modules``: modules that register built-in entries themselves, imported
        (once) before the registry is first read, so a built-in kept in a module of its own
        is registered wherever the registry is used, without an import cycle or a side
        effect in a package ``__init__``."""
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._pending = builtin_modules

    def _load_builtins(self) -> None:
        modules, self._pending = self._pending, ()
        for module in modules:
            importlib.import_module(module)

    def register(self, name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[T], T]:
        """Decorator that registers a value under ``name`` and its ``aliases``."""

        def add(value: T) -> T:
            self.add(name, value, aliases=aliases)
            return value

        return add

    def add(self, name: str, value: T, *, aliases: tuple[str, ...] = ()) -> None:
        """Registers ``value`` under ``name`` and its ``aliases``."""
        for key in (name, *aliases):
            if key in self._entries or key in self._aliases:
                raise ValueError(f"{self.kind} {key!r} is already registered")
        self._entries[name] = value
        for alias in aliases:
            self._aliases[alias] = name

    def remove(self, name: str) -> T:
        """Unregisters ``name`` and its aliases; returns its value (for tests that register
        a temporary entry)."""
        self._load_builtins()
        value = self.get(name)
        canonical = self.canonical(name)
        del self._entries[canonical]
        for alias in [a for a, target in self._aliases.items() if target == canonical]:
            del self._aliases[alias]
        return value

    def get(self, name: str) -> T:
        """Returns the value for ``name`` or an alias of it."""
        self._load_builtins()
        canonical = self._aliases.get(name, name)
        if canonical not in self._entries:
            raise UnknownChoiceError(
                f"unknown {self.kind} {name!r}; valid choices: {', '.join(self.choices())}"
            )
        return self._entries[canonical]

    def canonical(self, name: str) -> str:
        """The registered name behind ``name`` (itself, or the name an alias points to)."""
        self._load_builtins()
        self.get(name)
        return self._aliases.get(name, name)

    def names(self) -> tuple[str, ...]:
        """Registered canonical names, sorted."""
        self._load_builtins()
        return tuple(sorted(self._entries))

    def choices(self) -> tuple[str, ...]:
        """Every accepted spelling: canonical names and aliases, sorted."""
        self._load_builtins()
        return tuple(sorted((*self._entries, *self._aliases)))

    def in_order(self) -> tuple[str, ...]:
        """Every accepted spelling in registration order, each name followed by its aliases
        (the order a config's schema and its errors list them in)."""
        self._load_builtins()
        return tuple(
            spelling
            for name in self._entries
            for spelling in (name, *(a for a, target in self._aliases.items() if target == name))
        )

    def __contains__(self, name: object) -> bool:
        self._load_builtins()
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        self._load_builtins()
        return iter(self.names())

    def __len__(self) -> int:
        self._load_builtins()
        return len(self._entries)
