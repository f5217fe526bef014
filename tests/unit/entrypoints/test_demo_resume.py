"""A demo run can be continued (EDGE_CASES, issue 46 item 5): `lightrft demo --resume`, or
`lightrft train grpo --config RUN/config.yaml --resume` on the config the run recorded. Both
were refused: the recipe's (and the recorded) `logging.overwrite: true` contradicts
--resume."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES
from lightrft.entrypoints.recipes.resuming import with_start_choice
from lightrft.entrypoints.run_dir.directory import RunDirectoryError, decide_start
from lightrft.entrypoints.run_dir.guard import recorded_config_text


def _run_with_a_checkpoint(tmp_path: Path) -> Path:
    run = tmp_path / "demo"
    LocalCheckpointStore(run / "checkpoints").save(5, {"w": torch.zeros(1)})
    (run / "metrics.jsonl").write_text('{"step": 5}\n')
    return run


@pytest.mark.parametrize("flag", ["--resume", "checkpoint.resume=true", "--resume=auto"])
def test_demo_resume_drops_the_recipes_start_over(tmp_path: Path, flag: str) -> None:
    run = _run_with_a_checkpoint(tmp_path)
    words = with_start_choice(DEMO_OVERRIDES, [flag, f"logging.run_dir={run}"])
    config = load_config(None, words, algorithm="grpo")
    assert config.logging.overwrite is False and config.checkpoint.resume in (True, "auto")
    assert decide_start(run, config.checkpoint.resume, config.logging.overwrite) == "resume"
    plain = load_config(None, with_start_choice(DEMO_OVERRIDES, []), algorithm="grpo")
    assert plain.logging.overwrite is True  # without --resume the demo starts over


def test_an_explicit_overwrite_with_resume_is_still_a_contradiction(tmp_path: Path) -> None:
    run = _run_with_a_checkpoint(tmp_path)
    words = with_start_choice(DEMO_OVERRIDES, ["--resume", "logging.overwrite=true"])
    config = load_config(None, words, algorithm="grpo")
    with pytest.raises(RunDirectoryError, match="contradict"):
        decide_start(run, config.checkpoint.resume, config.logging.overwrite)


def test_the_recorded_config_resumes_without_edits(tmp_path: Path) -> None:
    run = _run_with_a_checkpoint(tmp_path)
    started = load_config(None, [*DEMO_OVERRIDES, f"logging.run_dir={run}"], "grpo")
    assert started.logging.overwrite is True
    recorded = tmp_path / "config.yaml"
    recorded.write_text(recorded_config_text(started))
    again = load_config(recorded, ["--resume"], algorithm="grpo")
    assert decide_start(run, again.checkpoint.resume, again.logging.overwrite) == "resume"
    assert again.model_dump(exclude={"checkpoint", "logging"}) == started.model_dump(
        exclude={"checkpoint", "logging"}
    )
