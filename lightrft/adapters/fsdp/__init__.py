"""FSDP2 training backend: ``Fsdp2Strategy`` (the ``Strategy`` port over ``fully_shard``)."""

from lightrft.adapters.fsdp.gather import clean_name
from lightrft.adapters.fsdp.sharding import layer_class_names, transformer_blocks
from lightrft.adapters.fsdp.strategy import DEFAULT_SYNC_BUCKET_BYTES, Fsdp2Strategy

__all__ = [
    "DEFAULT_SYNC_BUCKET_BYTES",
    "Fsdp2Strategy",
    "clean_name",
    "layer_class_names",
    "transformer_blocks",
]
