"""Types of on/off-style options that take YAML's booleans the way the user meant them.

YAML 1.1 (the config files, and the ``key=value`` overrides, which are parsed as YAML) reads
``on``/``off``, ``yes``/``no`` and ``true``/``false`` as booleans, so ``prefix_sharing: off``
arrives as ``False``. These annotated types turn a boolean, or one of those words as a
string (any case), into the option's own value before the ``Literal`` check:

* :data:`AutoOnOff` ``"auto" | "on" | "off"``: true -> ``"on"``, false -> ``"off"``;
* :data:`AutoOrBool` ``bool | "auto"``: the words -> ``True`` / ``False``; anything else is
  refused in one line that names the choices.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

TRUE_WORDS = frozenset({"on", "yes", "true"})
FALSE_WORDS = frozenset({"off", "no", "false"})


def _as_bool(value: Any) -> bool | None:
    """``value`` as a boolean when it is one or one of the switch words; else ``None``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    return None


def _on_off_word(value: Any) -> Any:
    flag = _as_bool(value)
    if flag is None:
        return value  # the Literal check names the choices
    return "on" if flag else "off"


def _auto_or_bool(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    flag = _as_bool(value)
    if flag is None:
        raise PydanticCustomError("switch", "expected true/false (or on/off, yes/no) or 'auto'")
    return flag


AutoOnOff = Annotated[Literal["auto", "on", "off"], BeforeValidator(_on_off_word)]
"""``"auto"``, ``"on"`` or ``"off"``; booleans and the switch words become ``"on"``/``"off"``."""

AutoOrBool = Annotated[bool | Literal["auto"], BeforeValidator(_auto_or_bool)]
"""``True``, ``False`` or ``"auto"``; the switch words become booleans."""
