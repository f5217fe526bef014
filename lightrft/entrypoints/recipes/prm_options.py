"""The options of `lightrft demo prm` (:mod:`~lightrft.entrypoints.recipes.prm`), apart from
the recipe so that its stages' modules (:mod:`~lightrft.entrypoints.recipes.prm_policy_data`)
read them without importing the recipe."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightrft.adapters.hf.scratch_model import ScratchModelSpec
from lightrft.entrypoints.next_command import NextCommand

SEPARATOR = "\n"  # a step is a line

PRM_DATA = ("own", "synthetic")
"""Where the PRM's rows come from: the (warmed) policy's own samples labelled by the step
checker, or built-in chains."""


@dataclass(frozen=True)
class PrmDemoOptions:
    """The task, the warm-up, the PRM's data and size, and the demo's directory."""

    run_dir: Path = Path("runs/demo_prm")
    policy: str = "smollm2"  # POLICY_PROFILES: the policy and the settings measured with it
    difficulty: str = "medium"  # synthetic_steps.DIFFICULTIES: the chains' numbers
    chain_length: int = 3  # operations per RL chain (the warm-up's are 1 to this many)
    warmup_steps: int = 32  # SFT steps on worked chains first (0: the policy as given)
    warmup_rows: int = 1024
    warmup_lr: float = 5e-5
    warmup_batch_size: int = 16
    warmup_micro_batch_size: int = 8
    prm_base_steps: int = 0  # SFT steps more for the PRM's backbone (0: the warmed policy)
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

    @classmethod
    def for_policy(cls, name: str, **fields: Any) -> PrmDemoOptions:
        """The options of policy profile ``name``: its settings, then ``fields`` over them."""
        if name not in POLICY_PROFILES:
            raise ValueError(f"policy {name!r} not among {', '.join(POLICY_PROFILES)}")
        return cls(policy=name, **{**POLICY_PROFILES[name].fields, **fields})


@dataclass(frozen=True)
class PolicyProfile:
    """A policy the demo starts from and the settings measured with it."""

    help: str
    fields: Mapping[str, Any]  # PrmDemoOptions values of the profile
    grpo: tuple[str, ...] = ()  # GRPO overrides of both arms, after the recipe's own
    scratch: ScratchModelSpec | None = None  # made here, when no model.path is given


POLICY_PROFILES: dict[str, PolicyProfile] = {
    "smollm2": PolicyProfile(
        help="SmolLM2-135M-Instruct (or model.path), warmed up 32 steps on medium chains",
        fields={},
    ),
    "tiny": PolicyProfile(
        help="a 1M-parameter byte-level Llama made here (or model.path: one made before), "
        "taught the small chains by 900 SFT steps; its PRM starts from it trained 400 steps "
        "more, 4 passes over 16384 own rows; its verdicts are step rewards at a quarter "
        "weight (process_grpo, process_weight 0.25); 60 GRPO steps of 16 prompts x 8 samples",
        fields={
            "difficulty": "small",
            "warmup_steps": 900,  # aims at W of docs/results.md (greedy ~0.16): unmeasured
            "warmup_rows": 28_800,  # a fresh row every time
            "warmup_lr": 2e-3,
            "warmup_batch_size": 32,
            "warmup_micro_batch_size": 32,
            "prm_base_steps": 400,
            "prm_rows": 16_384,  # the measured PRM's (prm16kB, docs/results.md)
            "prm_eval_rows": 512,
            "prm_epochs": 4,  # measured: 2 at 1e-3 then 2 at 5e-4
            "prm_batch_size": 32,
            "prm_lr": 1e-3,
            "prm_aggregate": "steps",  # with process_weight 0.25: 3 of 3 seeds (5 of 6)
        },
        grpo=(
            "rollout.prompts_per_step=16",
            "rollout.n_samples_per_prompt=8",
            "optim.lr=5e-5",
            "train.total_steps=60",
            "eval.every=20",
            "algorithm.process_weight=0.25",  # process_grpo's step returns; grpo ignores it
        ),
        scratch=ScratchModelSpec(),
    ),
}
"""``--policy``: ``smollm2`` (the default) or ``tiny``, the small model on which 60 GRPO steps
take minutes on a CPU."""
