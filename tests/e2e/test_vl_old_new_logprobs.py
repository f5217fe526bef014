"""verl #2996 guard: before the first update, the log-probs the optimizer computes for
vision-language rows equal the old log-probs the experience maker stored, through the real
composition root (the container's cycle: HF engine, HfPolicy with M-RoPE and pixels).

The two sides batch the rows differently on purpose: the experience maker runs no-grad
forwards of 5 rows, the optimizer shuffles, regroups and cuts micro-batches by a token
budget (multimodal batches keep their padded width: ``trim_padding`` leaves them as they
are). The rows (Geo3K-schema file, diagrams of four sizes) differ in length, so each
micro-batch concatenates other rows' pixels at other offsets under other padding. A
mismatch (media of another row, M-RoPE positions shifted by padding, token types
misplaced) shows as a ratio != 1 at step 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from lightrft.domain.rewards import RunningMoments
from lightrft.domain.types import SequenceBatch
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config.loading import load_config
from tests.helpers.hf_media_files import write_geo3k_parquet
from tests.helpers.tiny_multimodal import noise_image, save_tiny_vl_model


class RecordingPolicy:
    """The real policy, recording each forward's batch and log-probs (a spy, not a fake)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[SequenceBatch, Tensor]] = []

    def forward(self, batch: SequenceBatch, **options: Any) -> Any:
        out = self.inner.forward(batch, **options)
        self.calls.append((batch, out.logprobs.detach()))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def row_key(seq: SequenceBatch, row: int) -> tuple[int, ...]:
    return tuple(seq.input_ids[row][seq.attention_mask[row].bool()].tolist())


def test_old_and_new_logprobs_agree_at_step_0_on_image_rows(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    model = save_tiny_vl_model(tmp_path / "model", byte_level=True)
    sizes = [(28, 28), (60, 90), (100, 50), (40, 40)]  # 4 to 12 image positions each
    data = write_geo3k_parquet(
        tmp_path / "geo3k.parquet",
        [
            ("<image>" + " Find x." * (i + 1), [noise_image(w, h, i)], str(i))
            for i, (w, h) in enumerate(sizes)
        ],
    )
    config = load_config(
        None,
        [
            f"model.path={model}",
            "model.modality=vision-language",
            f"data.train.path={data}",
            "data.train.preprocessor=geo3k",
            "data.eval=null",
            "reward.sources=[{type: math}]",
            "rollout.prompts_per_step=4",
            "rollout.n_samples_per_prompt=3",
            "rollout.max_new_tokens=6",
            "rollout.forward_micro_batch_size=5",
            "train.mini_batch_size=12",  # old log-probs are recomputed (not on-policy reuse)
            "train.max_tokens_per_micro_batch=300",
            # every row through the optimizer's forward, also those with zero advantage
            "train.skip_zero_advantage_rows=false",
            f"logging.run_dir={tmp_path / 'run'}",
            "logging.progress=false",
        ],
    )
    cycle = build_container(config).cycle()
    collected = cycle.produce_rollout(0).item
    experience = cycle.maker.annotate(collected, kl_coef=0.0, moments=RunningMoments()).experience
    old = experience.old_logprobs
    assert old is not None and len(experience) == 12
    assert all(p for p in experience.sequences.multimodal)  # every row carries its image
    spy = RecordingPolicy(cycle.optimizer.policy)
    cycle.optimizer.policy = spy
    result = cycle.optimizer.train(experience, kl_coef=0.0, step=0)
    assert result.optimizer_steps == 1  # one mini-batch: every forward ran before the update
    rows_of: dict[tuple[int, ...], int] = {}
    for row in range(len(experience)):
        rows_of.setdefault(row_key(experience.sequences, row), row)
    micro_batches = []
    for batch, new in spy.calls:
        rows = [rows_of[row_key(batch, i)] for i in range(batch.input_ids.shape[0])]
        r = new.shape[1]
        for i, row in enumerate(rows):
            mask = batch.response_mask[i].bool()
            torch.testing.assert_close(new[i][mask], old[row, :r][mask], atol=1e-5, rtol=1e-5)
            assert not experience.response_mask[row, r:].any()
        micro_batches.append(rows)
    assert sorted(sum(micro_batches, [])) == list(range(12))  # every row scored once
    # other compositions than the maker's 5-row forwards: each row's pixels and grid sit at
    # another offset of the concatenated media (rows of a group stay adjacent)
    assert micro_batches != [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    assert result.metrics["policy/clip_fraction"] == 0.0
