"""Shared by the training commands: relaunching the command line under torchrun."""

from __future__ import annotations

import sys


def relaunch_under_torchrun(nproc_per_node: int) -> int | None:
    """With ``nproc_per_node > 1`` outside torchrun: runs this command line under torchrun
    and returns its exit status; otherwise ``None`` (go on in this process)."""
    if nproc_per_node <= 1:
        return None
    from lightrft.adapters.distributed.launch import relaunch_with_torchrun, running_under_torchrun

    if running_under_torchrun():
        return None
    return relaunch_with_torchrun(nproc_per_node, ["-m", "lightrft.entrypoints.cli", *sys.argv[1:]])
