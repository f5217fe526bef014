"""Which batch sizes are per rank and which global, as ``lightrft config show`` states them.

Every batch-size key of this project is per rank (each of the ``R`` data-parallel ranks
takes that many). The original LightRFT/OpenRLHF ``--rollout_batch_size`` (prompts) and
``--train_batch_size`` (samples per optimizer step) are global; their micro-batch sizes are
per GPU, as here.
"""

from __future__ import annotations

from typing import Any

BATCH_KEYS: tuple[tuple[str, str, str], ...] = (
    ("rollout.prompts_per_step", "prompts per step", "--rollout_batch_size (global)"),
    ("train.mini_batch_size", "samples per optimizer step", "--train_batch_size (global)"),
    ("train.micro_batch_size", "samples per forward/backward", "--micro_train_batch_size"),
    (
        "rollout.forward_micro_batch_size",
        "rows per no-grad forward",
        "--micro_rollout_batch_size",
    ),
)


def batch_scope_lines(config: Any, ranks: int) -> list[str]:
    """YAML comment lines: each batch-size key, its value per rank and over ``ranks``."""
    lines = [
        f"# batch sizes: per rank; this run has {ranks} rank(s) (WORLD_SIZE or "
        "backend.nproc_per_node)"
    ]
    for key, what, flag in BATCH_KEYS:
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value is None:  # mini_batch_size None: the whole step's samples
            value = config.rollout.prompts_per_step * config.rollout.n_samples_per_prompt
        lines.append(
            f"#   {key}: {value} {what} per rank = {value * ranks} over all ranks; flag {flag}"
        )
    return lines
