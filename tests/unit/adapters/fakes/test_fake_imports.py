"""The fakes import only the domain, the shared adapter parts, torch and the standard library,
and those parts only the domain, torch and the standard library (users need nothing else)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import lightrft.adapters.engine_parts as engine_parts
import lightrft.adapters.fakes as fakes
import lightrft.adapters.model_parts as model_parts
import lightrft.adapters.reward_parts as reward_parts
import lightrft.adapters.strategy_parts as strategy_parts

SHARED_PARTS = (engine_parts, model_parts, reward_parts, strategy_parts)
SHARED_PREFIXES = tuple(part.__name__ for part in SHARED_PARTS)

ALLOWED_PREFIXES = (
    "lightrft.domain",
    "lightrft.adapters.fakes",
    *SHARED_PREFIXES,
    "torch",
)


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_fakes_import_only_domain_torch_and_stdlib() -> None:
    package = Path(fakes.__file__).parent
    modules = sorted(package.glob("*.py"))
    assert len(modules) > 10
    for path in modules:
        for name in _imported_modules(path):
            top = name.split(".")[0]
            allowed = name.startswith(ALLOWED_PREFIXES) or top in sys.stdlib_module_names
            assert allowed or top == "__future__", f"{path.name} imports {name}"


def test_shared_parts_import_only_domain_torch_and_stdlib() -> None:
    paths = [
        path for part in SHARED_PARTS for path in sorted(Path(part.__file__).parent.glob("*.py"))
    ]
    assert len(paths) > 10
    for path in paths:
        for name in _imported_modules(path):
            top = name.split(".")[0]
            allowed = name.startswith(("lightrft.domain", *SHARED_PREFIXES, "torch"))
            assert allowed or top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_everything_exported_exists() -> None:
    assert all(hasattr(fakes, name) for name in fakes.__all__)
