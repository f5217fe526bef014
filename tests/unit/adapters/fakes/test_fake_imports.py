"""The fakes import only the domain, adapters/common, torch and the standard library, and
adapters/common only the domain, torch and the standard library (users need nothing else)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import lightrft.adapters.common as common
import lightrft.adapters.fakes as fakes

ALLOWED_PREFIXES = (
    "lightrft.domain",
    "lightrft.adapters.fakes",
    "lightrft.adapters.common",
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


def test_common_helpers_import_only_domain_torch_and_stdlib() -> None:
    for path in sorted(Path(common.__file__).parent.glob("*.py")):
        for name in _imported_modules(path):
            top = name.split(".")[0]
            allowed = name.startswith(("lightrft.domain", "lightrft.adapters.common", "torch"))
            assert allowed or top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_everything_exported_exists() -> None:
    assert all(hasattr(fakes, name) for name in fakes.__all__)
