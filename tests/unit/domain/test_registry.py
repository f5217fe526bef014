from __future__ import annotations

import sys
import types
from pathlib import Path

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


def _builtin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))


WIDGETS = "from lightrft_test_widgets_home import WIDGETS\n"


def test_listed_builtins_answer_validation_without_importing_their_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = types.ModuleType("lightrft_test_widgets_home")
    registry: Registry[int] = Registry(
        "widget",
        builtin_modules=("lightrft_test_widget_impl",),
        builtins={"one": ("uno",), "two": ()},
    )
    home.WIDGETS = registry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, home.__name__, home)
    _builtin_module(
        tmp_path,
        monkeypatch,
        "lightrft_test_widget_impl",
        WIDGETS + "WIDGETS.add('one', 1, aliases=('uno',))\nWIDGETS.add('two', 2)\n",
    )
    registry.add("plugin", 9)  # a plugin registered before anything is read
    assert "uno" in registry and "three" not in registry
    assert registry.in_order() == ("one", "uno", "two", "plugin")
    assert registry.names() == ("one", "plugin", "two")
    assert registry.choices() == ("one", "plugin", "two", "uno")
    assert "lightrft_test_widget_impl" not in sys.modules  # nothing imported so far
    assert registry.get("uno") == 1 and registry.get("plugin") == 9
    assert "lightrft_test_widget_impl" in sys.modules
    assert registry.in_order() == ("one", "uno", "two", "plugin")
    monkeypatch.delitem(sys.modules, "lightrft_test_widget_impl")


def test_a_builtin_list_that_drifted_from_its_module_is_refused_on_first_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = types.ModuleType("lightrft_test_widgets_home")
    registry: Registry[int] = Registry(
        "widget", builtin_modules=("lightrft_test_widget_drift",), builtins={"one": ("uno",)}
    )
    home.WIDGETS = registry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, home.__name__, home)
    _builtin_module(
        tmp_path,
        monkeypatch,
        "lightrft_test_widget_drift",
        WIDGETS + "WIDGETS.add('one', 1)\nWIDGETS.add('extra', 2)\n",
    )
    with pytest.raises(RuntimeError, match="registered the widgets .*'extra'.* lists"):
        registry.get("one")
    monkeypatch.delitem(sys.modules, "lightrft_test_widget_drift")


def test_the_algorithm_registries_list_exactly_what_their_modules_register() -> None:
    """Every built-in list of ``algorithm_registries`` matches its modules (``get`` checks
    it on loading), and the listed order is the order the modules register in."""
    from lightrft.domain import algorithm_registries as names

    for registry in (
        names.ADVANTAGE_ESTIMATORS,
        names.POLICY_LOSSES,
        names.KL_ESTIMATORS,
        names.KL_CONTROLLERS,
        names.STEP_AGGREGATIONS,
        names.AGGREGATIONS,
    ):
        listed = registry.in_order()
        registry.get(listed[0])  # loads the modules; raises if the list drifted
        assert registry.in_order()[: len(listed)] == listed
        assert all(registry.get(spelling) is not None for spelling in listed)
