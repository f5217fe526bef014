"""`lightrft train grpo model.modality=audio-language rollout.engine=vllm` end to end on the
real vLLM CPU backend (skipped without vLLM; slow: two engine starts' worth of imports and
a 30 s-chunk audio encoder): 2 steps of the `tones` task (two clips per prompt) on a tiny
random Qwen2-Audio, rewarded by a checksum of the text (a random model never says
"first"/"second"). The engine's log-probs of the sampled tokens equal the trainer's at both
steps (fp32: the rollout/* mismatch metrics are rounding-sized) while step 1 moved every
weight by about the learning rate: an engine left with stale weights after the sync would
differ by far more at step 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli_runs import TINY, final_weights, max_weight_diff, run_train
from tests.helpers.tiny_multimodal import tiny_qwen2_audio
from tests.unit.adapters.vllm.vllm_tiny import require_vllm
from tests.unit.adapters.vllm.vllm_tiny_audio import checkpoint_name, save_for_vllm

pytestmark = pytest.mark.slow


def test_two_audio_steps_on_vllm_train_with_engine_logprobs_equal_the_trainers(
    tmp_path: Path,
) -> None:
    require_vllm()
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    save_for_vllm(model_dir, tiny_qwen2_audio(0))
    run = tmp_path / "run"
    overrides = [o for o in TINY if not o.startswith("checkpoint.")]
    run_train(
        model_dir,
        run,
        *overrides,
        "model.modality=audio-language",
        "model.dtype=fp32",
        "data.train.builtin=tones",
        "reward.sources=[{type: python, function: 'tests.helpers.toy_rewards:text_checksum'}]",
        "rollout.engine={type: vllm, kv_cache_gib: 0.0625, max_model_len: 512, "
        "media_per_prompt: {audio: 2}}",
        "rollout.mismatch_metrics=true",
        "optim.lr=1e-2",
    )
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "rollout/logp_diff_max" in r]
    assert len(steps) == 2
    for row in steps:  # fp32, same weights: rounding only (measured 4.8e-7 at both steps)
        assert row["rollout/logp_diff_max"] < 1e-4, row
    base = {checkpoint_name(k): v for k, v in tiny_qwen2_audio(0).state_dict().items()}
    final = final_weights(run)
    moved = max_weight_diff(final, {k: base[k] for k in final})
    assert moved > 5e-3  # Adam at lr 1e-2 moved step 1's weights, which step 2's engine had
