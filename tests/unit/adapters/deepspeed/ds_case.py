"""Setup of the DeepSpeed tests: the shared sharded-strategy case plus DeepSpeed settings."""

from __future__ import annotations

from tests.helpers.sharded_case import *  # noqa: F403
from tests.helpers.sharded_case import __all__ as _shared

# ZeRO-3 keeps parameters below this many elements whole on every rank (default 1e5, i.e.
# all of the tiny model): 0 makes it really partition every parameter.
EXTRA_CONFIG = {"zero_optimization": {"stage3_param_persistence_threshold": 0}}

__all__ = [*_shared, "EXTRA_CONFIG"]
