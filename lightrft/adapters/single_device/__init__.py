"""Training on one device: ``SingleDeviceStrategy`` (the ``Strategy`` and ``Collective`` ports)."""

from lightrft.adapters.common.lr_schedule import lr_multiplier
from lightrft.adapters.single_device.strategy import SingleDeviceStrategy

__all__ = ["SingleDeviceStrategy", "lr_multiplier"]
