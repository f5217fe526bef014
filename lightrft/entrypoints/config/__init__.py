"""Run configuration: pydantic v2 models, YAML loading, overrides, algorithm presets.

``load_config`` and ``RunConfig`` are read from their modules when first asked for (PEP
562), so importing a light submodule (``presets``) does not import the config models and,
through the algorithm registries they validate against, torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lightrft.entrypoints.config.loading import load_config
    from lightrft.entrypoints.config.run_config import RunConfig

__all__ = ["RunConfig", "load_config"]
_HOMES = {
    "load_config": "lightrft.entrypoints.config.loading",
    "RunConfig": "lightrft.entrypoints.config.run_config",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
