"""Reading YAML from users: a cap on what aliases expand to, and short values in messages.

A YAML file of a kilobyte can name an anchor that names an anchor ... (an "alias bomb"):
PyYAML builds it as shared objects, but anything that walks it (validation, an error
message quoting the value) sees billions of nodes. The document's expanded size is counted
on the composed node graph, before any Python object is built.
"""

from __future__ import annotations

import reprlib
from typing import Any

import yaml

MAX_EXPANDED_NODES = 100_000
"""Nodes a config document may hold once its aliases are expanded (a large config has a
few hundred)."""

MAX_SHOWN_CHARS = 200
"""Characters of a value quoted in an error message."""


class YamlTooLargeError(ValueError):
    """A YAML document whose aliases expand past :data:`MAX_EXPANDED_NODES` nodes."""


def expanded_size(node: yaml.Node, limit: int = MAX_EXPANDED_NODES) -> int:
    """How many nodes ``node`` holds with every alias expanded, counting each shared node
    once per use; stops counting once past ``limit`` (returns a value > ``limit``)."""
    sizes: dict[int, int] = {}

    def size(current: yaml.Node, depth: int) -> int:
        if id(current) in sizes:
            return sizes[id(current)]
        if depth > 1_000:  # recursive aliases: count them as too large
            return limit + 1
        total = 1
        if isinstance(current, yaml.SequenceNode):
            children: list[yaml.Node] = list(current.value)
        elif isinstance(current, yaml.MappingNode):
            children = [part for pair in current.value for part in pair]
        else:
            children = []
        for child in children:
            total += size(child, depth + 1)
            if total > limit:
                break
        sizes[id(current)] = min(total, limit + 1)
        return sizes[id(current)]

    return size(node, 0)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, refusing a document that expands past the node cap.

    Raises ``yaml.YAMLError`` for bad syntax and :class:`YamlTooLargeError` for a bomb.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if expanded_size(node) > MAX_EXPANDED_NODES:
            raise YamlTooLargeError(
                f"its aliases (*name) expand to more than {MAX_EXPANDED_NODES:,} values; "
                "write the values out or use fewer nested aliases"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` of at most about ``limit`` characters, built without walking all of
    a huge (or alias-shared) value."""
    short = reprlib.Repr()
    short.maxstring = short.maxother = limit
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 20
    short.maxlevel = 4
    text = short.repr(value)
    return text if len(text) <= limit else text[:limit] + "...(cut)"
