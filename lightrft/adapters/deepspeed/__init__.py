"""DeepSpeed training backend: ``DeepSpeedStrategy`` (the ``Strategy`` port over ZeRO 0-3).

Importing this package does not import ``deepspeed``; preparing a strategy does
(install it with the ``deepspeed`` extra).
"""

from lightrft.adapters.deepspeed.config import build_deepspeed_config, merge_configs
from lightrft.adapters.deepspeed.strategy import DeepSpeedStrategy

__all__ = ["DeepSpeedStrategy", "build_deepspeed_config", "merge_configs"]
