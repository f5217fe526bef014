"""Starting workers with ``torchrun`` (``python -m torch.distributed.run``).

The CLI calls :func:`relaunch_with_torchrun` when asked for ``--nproc-per-node N`` outside a
launcher: the same interpreter runs ``torch.distributed.run``, which starts N copies of the
command. The rendezvous binds to localhost by default (one node).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence

LOCALHOST = "127.0.0.1"


def torchrun_command(
    nproc_per_node: int,
    argv: Sequence[str],
    *,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = LOCALHOST,
    master_port: int = 29500,
) -> list[str]:
    """The command line that runs ``argv`` on ``nproc_per_node`` workers of this node.

    ``argv`` is what follows ``python`` in a plain run: ``["script.py", ...]`` or
    ``["-m", "package.module", ...]``.
    """
    if nproc_per_node < 1:
        raise ValueError(f"nproc_per_node must be >= 1, got {nproc_per_node}")
    if nnodes < 1:
        raise ValueError(f"nnodes must be >= 1, got {nnodes}")
    if not 0 <= node_rank < nnodes:
        raise ValueError(f"node_rank must be in [0, {nnodes}), got {node_rank}")
    if not 0 < master_port < 65536:
        raise ValueError(f"master_port must be in (0, 65536), got {master_port}")
    if not argv:
        raise ValueError("argv is empty: give a script or '-m module' to run")
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc_per_node}",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        f"--master-addr={master_addr}",
        f"--master-port={master_port}",
        *argv,
    ]


def free_port(host: str = LOCALHOST) -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def running_under_torchrun(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process is a worker started by ``torchrun`` (or another launcher)."""
    env = os.environ if env is None else env
    return "TORCHELASTIC_RUN_ID" in env or "LOCAL_RANK" in env


def relaunch_with_torchrun(
    nproc: int,
    argv: Sequence[str],
    *,
    master_port: int | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Runs ``argv`` on ``nproc`` local workers and waits; returns the exit code.

    The rendezvous is on 127.0.0.1 at ``master_port`` (a free port when ``None``). Refuses
    to run inside a worker, which would start workers recursively.
    """
    run_env = dict(os.environ if env is None else env)
    if running_under_torchrun(run_env):
        raise RuntimeError("already running under torchrun; refusing to launch workers again")
    port = free_port() if master_port is None else master_port
    command = torchrun_command(nproc, argv, master_port=port)
    return subprocess.run(command, env=run_env, check=False).returncode
