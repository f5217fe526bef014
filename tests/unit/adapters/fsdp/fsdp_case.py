"""Setup of the FSDP2 tests: the shared sharded-strategy case."""

from __future__ import annotations

from tests.helpers.sharded_case import *  # noqa: F403
from tests.helpers.sharded_case import __all__ as __all__  # noqa: PLC0414
