"""Wall time of the CLI's answers that need no training: help texts and config errors.

Run: ``.venv/bin/python bench/bench_cli_startup.py [--runs N] [--before REV]``. Each command
runs ``N`` times in a fresh interpreter (``python -m lightrft.entrypoints.cli ...`` from this
checkout); the table gives the min and median wall time. ``--before REV`` adds columns for
the same commands run from a ``git worktree`` of ``REV`` (e.g. ``main``), made in a temporary
directory and removed after. A loaded machine adds its load to every figure: compare the
columns of one run, not figures of different runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("train", "--help"),
    ("config", "show", "grpo", "bad.key=1"),
    ("train", "grpo", "algorithm.policy_loss=nope"),
)


def wall_times(checkout: Path, args: tuple[str, ...], runs: int) -> list[float]:
    """Seconds of ``runs`` fresh ``lightrft ARGS`` runs from ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "lightrft.entrypoints.cli", *args],
            cwd=checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        times.append(time.perf_counter() - start)
    return times


def _cell(times: list[float]) -> str:
    return f"{min(times):.2f} / {statistics.median(times):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--before", metavar="REV", help="also time the checkout of REV")
    args = parser.parse_args()
    columns = {"after (s, min / median)": ROOT}
    with tempfile.TemporaryDirectory() as scratch:
        if args.before:
            before = Path(scratch) / "before"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before), args.before],
                check=True,
                capture_output=True,
            )
            columns = {f"{args.before} (s, min / median)": before, **columns}
        try:
            header = ["command", *columns]
            print("| " + " | ".join(header) + " |")
            print("|" + "---|" * len(header))
            for command in COMMANDS:
                cells = [_cell(wall_times(path, command, args.runs)) for path in columns.values()]
                print(f"| `lightrft {' '.join(command)}` | " + " | ".join(cells) + " |")
        finally:
            if args.before:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)],
                    check=False,
                    capture_output=True,
                )


if __name__ == "__main__":
    main()
