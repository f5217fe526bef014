"""Running the scripts of examples/ from the tests: the command's environment (the CLI as
``python -m lightrft.entrypoints.cli``, single-threaded, CPU sizes) and the subprocess."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLI = f"{sys.executable} -m lightrft.entrypoints.cli"


def run_example(
    script: str, *args: str, stdin: str = "", check: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    """``bash examples/<script> args...`` with ``env`` added; with ``check``, fails the test
    (showing stderr's tail) unless it exits 0."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.getcwd(),
        "OMP_NUM_THREADS": "1",
        "PYTHON": sys.executable,
        "LIGHTRFT": CLI,
        "NPROC": "0",
        "WANDB_MODE": "disabled",
        **env,
    }
    done = subprocess.run(
        ["bash", str(EXAMPLES / script), *args],
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def preprocess(script: str, *args: str) -> str:
    """``python examples/<script> args...``; its stdout (fails the test on an error)."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def printed_command(output: str) -> list[str]:
    """The command line a dry run printed (the last line), without the CLI's own words."""
    words = shlex.split(output.strip().splitlines()[-1])
    cli = shlex.split(CLI)
    assert words[: len(cli)] == cli, words
    return words[len(cli) :]
