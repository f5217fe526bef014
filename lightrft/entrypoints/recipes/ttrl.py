"""`lightrft demo ttrl`: test-time RL (TTRL, Zuo et al. 2025, arXiv:2504.16084) on the main
job's held-out problems, without their answers, continuing from the main job's step-5 model."""

from __future__ import annotations

import argparse
from pathlib import Path

from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES, MAIN_JOB_RUN
from lightrft.entrypoints.recipes.registry import DemoRecipe

START_STEP = 5
"""The main job's checkpoint TTRL continues from."""

START_MODEL = f"{MAIN_JOB_RUN}_step_{START_STEP}_model"
"""Where that checkpoint is exported (by ``lightrft demo ttrl`` when it is missing or older
than the checkpoint): beside the main job's run directory, since an export never writes
into a run directory."""

TTRL_OVERRIDES = [
    "logging.run_dir=runs/demo_ttrl",
    # TTRL gains where the majority of a prompt's samples is right more often than one sample
    # (maj@8 > pass@1): the main job's final model has nearly no such margin, its step-5 model
    # has (docs/results.md, "Test-time RL")
    f"model.path={START_MODEL}",
    # test-time: the policy trains on the very problems it is evaluated on, the held-out 100
    # (data.eval's split, seed and count), with their answers unused. Trained on other
    # problems, the consensus it learned spread to the held-out ones as wrong arithmetic
    "data.train.builtin_split=heldout",
    "data.train.seed=10000",
    "data.train.num_builtin=100",
    # label-free: the reward is agreement with the majority answer of the sample's group,
    # trusted only when at least 6 of the 8 samples agree; the math rule is only measured
    # (weight 0), so the references never reach the gradient and eval/reward/math/accuracy
    # is the held-out accuracy
    "reward.sources=[{type: ttrl, name: ttrl, min_share: 0.75}, "
    "{type: math, name: math, weight: 0}]",
    # a gentle step held to the starting model: without the KL term the majority itself
    # drifts to wrong answers (docs/results.md, "Test-time RL")
    "optim.lr=5e-6",
    "algorithm.kl_coef=0.05",
    # the majority vote needs a group: 8 prompts x 8 samples, at the main job's temperature
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=8",
    "rollout.temperature=0.6",
    # its figures (docs/results.md) were measured with the trainer's log-probs at temperature
    # 1, before the sampling-temperature default (docs/algorithms.md); not re-measured yet
    "algorithm.logprob_temperature=1.0",
    # TTRL's own measure: pass@1 estimated from 8 samples per held-out problem at the
    # rollout temperature (and the majority's accuracy, eval/reward/ttrl/label_accuracy)
    "eval.n_samples=8",
    "eval.temperature=0.6",
    "eval.every=5",
    # measured without the main job's restart of a collapsed run (docs/health.md)
    "train.on_collapse=warn",
]
"""``lightrft demo ttrl``: the main job with test-time RL's majority-vote reward instead."""


def ttrl_overrides(rest: list[str]) -> list[str]:
    """:data:`TTRL_OVERRIDES` plus ``rest``. The default starting model is exported from the
    main job's step-5 checkpoint when it is not there yet; a ``model.path`` that does not
    exist is refused (TTRL continues from a trained model)."""
    overrides = TTRL_OVERRIDES + rest
    model = [o.split("=", 1)[1] for o in overrides if o.startswith("model.path=")][-1]
    if model == START_MODEL and _stale(Path(model)):
        _export_start_model()
    if not Path(model).exists():
        raise FileNotFoundError(
            f"lightrft demo ttrl continues from a trained model and {model} does not exist: "
            "run `lightrft demo` first, or give model.path=DIR"
        )
    return overrides


def _stale(model: Path) -> bool:
    """Whether the start model is missing or older than the main job's step-5 checkpoint
    (the main job ran again since it was exported)."""
    checkpoint = Path(MAIN_JOB_RUN) / "checkpoints" / f"step_{START_STEP:08d}"
    if not model.exists():
        return True
    return checkpoint.is_dir() and checkpoint.stat().st_mtime > model.stat().st_mtime


def _export_start_model() -> None:
    """Exports the main job's step-5 checkpoint to :data:`START_MODEL`, if the run has it."""
    from lightrft.entrypoints.jobs.checkpoint_export import export_checkpoint
    from lightrft.entrypoints.run_dir.directory import checkpoint_steps

    checkpoints = Path(MAIN_JOB_RUN) / "checkpoints"
    if START_STEP not in checkpoint_steps(checkpoints):
        return
    # a stale export of an earlier main job is moved aside (START_MODEL.old-<UTC time>)
    done = export_checkpoint(Path(MAIN_JOB_RUN), Path(START_MODEL), START_STEP, force=True)
    print(f"lightrft demo ttrl: exported step {done.step} of {MAIN_JOB_RUN} to {done.model}")


def run_ttrl_demo(args: argparse.Namespace, overrides: list[str]) -> int:
    """``lightrft demo ttrl``: the main job's settings, then :func:`ttrl_overrides`."""
    from lightrft.entrypoints.jobs.demo import run_grpo_demo
    from lightrft.entrypoints.recipes.resuming import resumes, with_start_choice
    from lightrft.entrypoints.recipes.stage_checks import check_stage

    check_stage("GRPO", [*DEMO_OVERRIDES, *TTRL_OVERRIDES, *overrides])  # before the export
    if resumes(overrides):  # the run continues from its own checkpoint: no start model
        return run_grpo_demo(
            with_start_choice(DEMO_OVERRIDES + TTRL_OVERRIDES, overrides), args.argv
        )
    return run_grpo_demo(DEMO_OVERRIDES + ttrl_overrides(overrides), args.argv)


RECIPE = DemoRecipe(
    name="ttrl",
    help="test-time RL: a label-free majority-vote reward on the held-out problems, from the "
    "main job's step-5 model (run 'lightrft demo' first)",
    run=run_ttrl_demo,
)
