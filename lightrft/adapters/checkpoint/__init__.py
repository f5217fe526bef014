"""Run-state persistence: the ``CheckpointStore`` port on a local filesystem."""

from lightrft.adapters.checkpoint.local_store import (
    CheckpointNotFoundError,
    CheckpointWriteError,
    LocalCheckpointStore,
)
from lightrft.adapters.checkpoint.safe_state import (
    UnsafeCheckpointStateError,
    check_weights_only_safe,
)

__all__ = [
    "CheckpointNotFoundError",
    "CheckpointWriteError",
    "LocalCheckpointStore",
    "UnsafeCheckpointStateError",
    "check_weights_only_safe",
]
