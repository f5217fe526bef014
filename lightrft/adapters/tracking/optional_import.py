"""Imports of optional tracking libraries with an error that says how to install them."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = "pip install 'lightrft[tracking]'"


def import_optional(module: str, tracker: str) -> ModuleType:
    """``importlib.import_module(module)``, or an ``ImportError`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{tracker} needs the {module.split('.')[0]!r} package, which is not installed: "
            f"{INSTALL_HINT}"
        ) from error
