from __future__ import annotations

import pytest

from lightrft.domain.registry import Registry, UnknownChoiceError


def test_register_get_and_aliases() -> None:
    registry: Registry[int] = Registry("widget")

    @registry.register("one", aliases=("uno",))
    def _one() -> int:
        return 1

    registry.add("two", lambda: 2)  # type: ignore[arg-type]
    assert registry.get("one") is _one
    assert registry.get("uno") is _one
    assert registry.canonical("uno") == "one"
    assert registry.names() == ("one", "two")
    assert registry.choices() == ("one", "two", "uno")
    assert "uno" in registry and "three" not in registry
    assert len(registry) == 2


def test_duplicates_are_refused() -> None:
    registry: Registry[int] = Registry("widget")
    registry.add("a", 1, aliases=("b",))
    with pytest.raises(ValueError, match="'a' is already registered"):
        registry.add("a", 2)
    with pytest.raises(ValueError, match="'b' is already registered"):
        registry.add("c", 3, aliases=("b",))


def test_unknown_name_lists_choices() -> None:
    registry: Registry[int] = Registry("widget")
    registry.add("a", 1, aliases=("alpha",))
    with pytest.raises(UnknownChoiceError) as info:
        registry.get("zeta")
    assert str(info.value) == "unknown widget 'zeta'; valid choices: a, alpha"


def test_in_order_lists_names_as_registered_each_followed_by_its_aliases() -> None:
    registry: Registry[int] = Registry("widget")
    registry.add("zulu", 1, aliases=("z", "last"))
    registry.add("alpha", 2)
    registry.add("mike", 3, aliases=("m",))
    assert registry.in_order() == ("zulu", "z", "last", "alpha", "mike", "m")
    registry.remove("zulu")
    assert registry.in_order() == ("alpha", "mike", "m")
