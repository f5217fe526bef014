"""Process groups, the ``Collective`` port over ``torch.distributed`` and ``torchrun`` launch."""

from lightrft.adapters.distributed.collective import (
    CollectiveTimeoutError,
    LocalCollective,
    TorchCollective,
)
from lightrft.adapters.distributed.launch import (
    free_port,
    relaunch_with_torchrun,
    running_under_torchrun,
    torchrun_command,
)
from lightrft.adapters.distributed.process_group import (
    LaunchEnv,
    init_process_group_from_env,
    is_main_process,
    leaving_process_group,
    shutdown_process_group,
)

__all__ = [
    "CollectiveTimeoutError",
    "LaunchEnv",
    "LocalCollective",
    "TorchCollective",
    "free_port",
    "init_process_group_from_env",
    "is_main_process",
    "leaving_process_group",
    "relaunch_with_torchrun",
    "running_under_torchrun",
    "shutdown_process_group",
    "torchrun_command",
]
