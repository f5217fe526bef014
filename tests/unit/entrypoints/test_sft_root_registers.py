"""The sft root registers the builders itself: in a fresh interpreter (no test hook has
registered them) it finds the model loader of the checkpoint's modality."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = """
import sys
from lightrft.entrypoints.config.loading import load_sft_config
from lightrft.entrypoints.roots.sft import sft_tokenizer
config = load_sft_config(None, [f"model.path={sys.argv[1]}", "model.modality=text"])
tokenizer = sft_tokenizer(config)
print(type(tokenizer).__name__)
"""


def test_sft_tokenizer_in_a_fresh_process(tiny_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(tiny_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Tokenizer" in done.stdout
