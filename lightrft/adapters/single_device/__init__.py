"""Training on one device: ``SingleDeviceStrategy`` (the ``Strategy`` and ``Collective`` ports)."""

from lightrft.adapters.single_device.strategy import SingleDeviceStrategy
from lightrft.adapters.strategy_parts.lr_schedule import lr_multiplier

__all__ = ["SingleDeviceStrategy", "lr_multiplier"]
