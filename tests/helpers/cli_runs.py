"""Command lines for `lightrft train grpo` runs of the e2e tests (as a subprocess)."""

from __future__ import annotations

import sys
from pathlib import Path


def train_grpo_command(model_dir: Path, run_dir: Path, *overrides: str) -> list[str]:
    """`python -m lightrft.entrypoints.cli train grpo` on ``model_dir`` writing ``run_dir``."""
    return [
        sys.executable,
        "-m",
        "lightrft.entrypoints.cli",
        "train",
        "grpo",
        f"model.path={model_dir}",
        f"logging.run_dir={run_dir}",
        *overrides,
    ]
