"""The options of `lightrft demo prm` (:mod:`~lightrft.entrypoints.recipes.prm`), apart from
the recipe so that its stages' modules (:mod:`~lightrft.entrypoints.recipes.prm_policy_data`)
read them without importing the recipe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lightrft.entrypoints.next_command import NextCommand

SEPARATOR = "\n"  # a step is a line

PRM_DATA = ("own", "synthetic")
"""Where the PRM's rows come from: the (warmed) policy's own samples labelled by the step
checker, or built-in chains."""


@dataclass(frozen=True)
class PrmDemoOptions:
    """The task, the warm-up, the PRM's data and size, and the demo's directory."""

    run_dir: Path = Path("runs/demo_prm")
    difficulty: str = "medium"  # synthetic_steps.DIFFICULTIES: the chains' numbers
    chain_length: int = 3  # operations per RL chain (the warm-up's are 1 to this many)
    warmup_steps: int = 32  # SFT steps on worked chains first (0: the policy as given)
    warmup_rows: int = 1024
    warmup_lr: float = 5e-5
    prm_data: str = "own"  # own: the warmed policy's samples, labelled; synthetic: built-in rows
    prm_rows: int = 1024  # PRM training rows (own: prompts x prm_samples)
    prm_samples: int = 4  # own: samples per prompt
    prm_eval_rows: int = 128  # held-out rows (other prompts)
    prm_steps: int | None = None  # None: prm_epochs over the rows
    prm_epochs: int = 2  # over own rows: 128 steps of 16 (the measured PRM)
    prm_batch_size: int = 16
    prm_lr: float = 3e-5
    prm_eval_every: int | None = None  # held-out step accuracy every N PRM steps too
    prm_error_rate: float = 0.3  # synthetic: chains with one wrong step
    prm_wrong_result_share: float = 0.5  # synthetic: of the wrong steps, those with a wrong result
    prm_junk_rate: float = 0.15  # synthetic: chains with one line that is not a step
    prm_phrasings: tuple[str, ...] = ("symbol",)  # synthetic: how the steps are written
    prm_model: Path | None = None  # a PRM trained before: skips the PRM stage
    step_threshold: float | None = 0.5  # process_rm's step_threshold in the process arm
    prm_aggregate: str = "mean"  # one reward added to the outcome's; steps: process_grpo
    train_problems: int = 512
    eval_problems: int = 128
    sample_temperature: float = 0.8  # the RL rollouts' and the own rows' sampling
    max_new_tokens: int = 48  # a three-operation worked chain takes ~30 tokens
    separator: str = SEPARATOR
    overwrite: bool = True
    next_command: NextCommand = field(default_factory=NextCommand)
