"""`lightrft train grpo` on a tiny random InternVL (transformers' own classes, no remote code)
with the built-in ``visual_colour`` image rows and no modality setting: the run resolves to
vision-language from ``config.json``, a step trains the language model through the real data
layer, HF engine, policy and optimizer while the frozen image path (vision tower and
projector) stays as it was, and the exported model loads again with its tiling processor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from lightrft.adapters.hf.internvl import load_internvl_image_tiles
from tests.helpers.cli_runs import final_weights, run_train
from tests.helpers.tiny_internvl import TOKENS_PER_TILE, save_tiny_internvl


@pytest.mark.slow  # one step: 140-190 s at load 16-17 on the shared 2-core CPU, imports included
def test_a_grpo_step_on_internvl_image_rows(tmp_path: Path) -> None:
    model = save_tiny_internvl(tmp_path / "model")
    run = tmp_path / "run"
    run_train(
        model,
        run,
        "data.train.builtin=visual_colour",
        "data.train.num_builtin=8",
        "data.eval=null",
        "reward.sources=[{type: python, function: 'tests.helpers.toy_rewards:text_checksum'}]",
        "train.total_steps=1",
        "rollout.prompts_per_step=4",
        "rollout.n_samples_per_prompt=4",
        "rollout.max_new_tokens=3",
        "optim.lr=1e-2",
        "logging.progress=false",
    )
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["model"]["modality"] == "vision-language"  # auto, from config.json
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in metrics if "reward/mean" in row] == [1]
    before = load_file(str(model / "model.safetensors"))
    after = final_weights(run)
    assert before.keys() == after.keys()
    changed = {k for k in before if not bool((before[k] == after[k]).all())}
    # saved in the released layout: language_model.model.*, vision_tower.*, multi_modal_projector.*
    assert any(k.startswith("language_model.") for k in changed)  # trained
    assert any(k.startswith(("vision_tower.", "multi_modal_projector.")) for k in before)
    assert not any(k.startswith(("vision_tower.", "multi_modal_projector.")) for k in changed)
    tiles = load_internvl_image_tiles(run / "final_model")  # exported with its processor
    assert tiles.tokens_per_tile == TOKENS_PER_TILE and tiles.image_processor.max_patches == 4
