"""Every module a docstring, comment or doc page points to exists.

Checked: dotted names ``lightrft.a.b[.attr]`` (the longest prefix that is a module or
package, then at most one attribute defined in it) and paths ``lightrft/.../x.py`` (also
written from the package: ``domain/x.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import lightrft

PACKAGE = Path(lightrft.__file__).parent
ROOT = PACKAGE.parent
DOTTED = re.compile(r"\blightrft(?:\.[A-Za-z_]\w*)+")
NOT_MODULES = frozenset({"lightrft.plugins"})  # an entry-point group, not a module
PATH = re.compile(
    r"(?<![\w/.])(?:lightrft/)?(?:domain|application|adapters|entrypoints)/[\w/]+\.py\b"
)


def _source_of(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _dangling(name: str) -> bool:
    """Whether ``name`` names no module, package or attribute defined in one."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        source = _source_of(parts[:k])
        if source is None:
            continue
        rest = parts[k:]
        if not rest:
            return False
        defined = (
            rf"^\s*(?:def|class|async def)\s+{rest[0]}\b|^\s*{rest[0]}\s*[:=]|import.*\b{rest[0]}\b"
        )
        return len(rest) > 2 or not re.search(defined, source.read_text(), re.MULTILINE)
    return True


def _texts() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md"))
    return [*files, ROOT / "README.md"]


def test_dotted_module_names_exist() -> None:
    dangling = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _texts()
        if path.is_file()
        for name in sorted(set(DOTTED.findall(path.read_text())))
        if name.rstrip(".") not in NOT_MODULES and _dangling(name.rstrip("."))
    ]
    assert not dangling, dangling


def test_file_paths_exist() -> None:
    dangling = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _texts()
        if path.is_file()
        for name in sorted(set(PATH.findall(path.read_text())))
        if not (ROOT / name).is_file() and not (PACKAGE / name).is_file()
    ]
    assert not dangling, dangling
