"""The torchrun command line and the relaunch helper."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lightrft.adapters.distributed import (
    free_port,
    relaunch_with_torchrun,
    running_under_torchrun,
    torchrun_command,
)

SCRIPT = """import os, sys
from pathlib import Path
keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
out = Path(sys.argv[1]) / ("rank" + os.environ["RANK"])
out.write_text(" ".join([os.environ[k] for k in keys] + sys.argv[2:]))
"""


def test_torchrun_command_defaults_to_one_node_on_localhost() -> None:
    assert torchrun_command(4, ["-m", "lightrft.entrypoints.cli", "train"]) == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=4",
        "--nnodes=1",
        "--node-rank=0",
        "--master-addr=127.0.0.1",
        "--master-port=29500",
        "-m",
        "lightrft.entrypoints.cli",
        "train",
    ]


def test_torchrun_command_for_a_second_node() -> None:
    command = torchrun_command(
        8, ["train.py"], nnodes=2, node_rank=1, master_addr="10.0.0.1", master_port=6000
    )
    assert command[3:] == [
        "--nproc-per-node=8",
        "--nnodes=2",
        "--node-rank=1",
        "--master-addr=10.0.0.1",
        "--master-port=6000",
        "train.py",
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nproc_per_node": 0}, "nproc_per_node"),
        ({"nnodes": 0}, "nnodes"),
        ({"nnodes": 2, "node_rank": 2}, "node_rank"),
        ({"master_port": 70000}, "master_port"),
        ({"argv": []}, "argv"),
    ],
)
def test_torchrun_command_refuses_bad_values(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"nproc_per_node": 2, "argv": ["x.py"], **kwargs}
    with pytest.raises(ValueError, match=message):
        torchrun_command(**arguments)  # type: ignore[arg-type]


def test_running_under_torchrun_reads_the_worker_variables() -> None:
    assert not running_under_torchrun({})
    assert running_under_torchrun({"LOCAL_RANK": "0"})
    assert running_under_torchrun({"TORCHELASTIC_RUN_ID": "none"})


def test_relaunch_refuses_to_nest_inside_a_worker() -> None:
    with pytest.raises(RuntimeError, match="already running under torchrun"):
        relaunch_with_torchrun(2, ["x.py"], env={"LOCAL_RANK": "0"})


def test_free_port_can_be_bound() -> None:
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_relaunch_starts_the_workers_on_localhost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("LOCAL_RANK", "TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    script = tmp_path / "worker.py"
    script.write_text(SCRIPT)
    code = relaunch_with_torchrun(2, [str(script), str(tmp_path), "--flag", "v"])
    assert code == 0
    for rank in range(2):
        fields = (tmp_path / f"rank{rank}").read_text().split()
        assert fields[:4] == [str(rank), str(rank), "2", "127.0.0.1"]
        assert fields[5:] == ["--flag", "v"]
    ports = {(tmp_path / f"rank{r}").read_text().split()[4] for r in range(2)}
    assert len(ports) == 1  # one rendezvous for both


def test_relaunch_returns_the_workers_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    script = tmp_path / "fail.py"
    script.write_text("raise SystemExit(3)\n")
    assert relaunch_with_torchrun(1, [str(script)]) != 0
