"""No module of lightrft imports itself back through others (no import cycle anywhere).

The import graph is grimp's (the library import-linter runs on); imports under
``if TYPE_CHECKING:`` count too, since they tie the modules' designs together all the same.
A cycle is a strongly connected component of two or more modules (Tarjan's algorithm).
"""

from __future__ import annotations

import grimp


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of two or more modules, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(imports.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def test_cycle_finder_finds_a_cycle_and_only_the_cycle() -> None:
    # a -> b -> c -> a is a cycle; d hangs off it; e -> f is a plain chain.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_lightrft_has_no_import_cycle() -> None:
    graph = grimp.build_graph("lightrft", cache_dir=None)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    cycles = _cycles(imports)
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
