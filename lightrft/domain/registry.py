"""A small generic name -> value registry.

Every algorithm family (advantage estimators, policy losses, KL estimators, aggregation
modes) is one ``Registry`` instance. The names are the strings users type in a config.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
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

    def __init__(
        self,
        kind: str,
        *,
        builtin_modules: tuple[str, ...] = (),
        builtins: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        """``builtin_modules``: modules that register built-in entries themselves, imported
        (once) before the registry is first read, so a built-in kept in a module of its own
        is registered wherever the registry is used, without an import cycle or a side
        effect in a package ``__init__``.

        ``builtins``: the names those modules register, each with its aliases, in the order
        a config lists them. With it, the questions a config's validation asks (``in``,
        ``names``, ``choices``, ``in_order``) are answered without importing the modules
        (which may import torch), so a config error answers at once; ``get`` imports them
        and checks that they registered exactly these names."""
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._pending = builtin_modules
        self._builtins = dict(builtins) if builtins is not None else None

    def _load_builtins(self) -> None:
        modules, self._pending = self._pending, ()
        before = set(self._entries)
        for module in modules:
            importlib.import_module(module)
        if modules and self._builtins is not None:
            self._check_builtins(modules, before)

    def _aliases_of(self, name: str) -> tuple[str, ...]:
        return tuple(a for a, target in self._aliases.items() if target == name)

    def _check_builtins(self, modules: tuple[str, ...], before: set[str]) -> None:
        """The names ``modules`` registered (and built-ins registered before) must be the
        listed ``builtins``, aliases included: a list that drifted from the code would
        accept a name ``get`` cannot find, or refuse one it can."""
        assert self._builtins is not None
        listed = {name: set(aliases) for name, aliases in self._builtins.items()}
        found = {
            name: set(self._aliases_of(name))
            for name in self._entries
            if name in listed or name not in before
        }
        if found != listed:
            raise RuntimeError(
                f"{', '.join(modules)} registered the {self.kind}s {found}, but the registry "
                f"lists {listed} as its built-ins"
            )

    def _known(self) -> tuple[str, ...]:
        """Every spelling, built-ins first (listed or registered), without loading when the
        built-ins are listed."""
        if self._builtins is None or not self._pending:
            self._load_builtins()
            ordered = self._builtins or {}
        else:
            ordered = self._builtins
        listed = [s for name, aliases in ordered.items() for s in (name, *aliases)]
        if not self._pending:  # loaded: what is registered now (a test may remove one)
            listed = [s for s in listed if s in self._entries or s in self._aliases]
        others = [
            s
            for name in self._entries
            if name not in ordered
            for s in (name, *self._aliases_of(name))
        ]
        return (*listed, *others)

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
        aliases = set(self._aliases) | {
            a for aliases in (self._builtins or {}).values() for a in aliases
        }
        return tuple(sorted(s for s in self._known() if s not in aliases))

    def choices(self) -> tuple[str, ...]:
        """Every accepted spelling: canonical names and aliases, sorted."""
        return tuple(sorted(self._known()))

    def in_order(self) -> tuple[str, ...]:
        """Every accepted spelling, each name followed by its aliases: the listed built-ins
        first, then the others in registration order (the order a config's schema and its
        errors list them in)."""
        return self._known()

    def __contains__(self, name: object) -> bool:
        return name in self._known()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
