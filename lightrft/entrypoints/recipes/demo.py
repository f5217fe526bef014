"""`lightrft demo`: the main job's recipe, `lightrft train grpo` sized for a 2-core CPU (about
3-4 minutes idle) on the embedded SmolLM2-135M-Instruct; run by :mod:`lightrft.entrypoints.jobs.demo`."""

from __future__ import annotations

import argparse

from lightrft.entrypoints.recipes.registry import DemoRecipe

DEMO_OVERRIDES = [
    "logging.run_dir=runs/demo",
    # running the demo again starts over: the previous one moves to runs/demo.old-<UTC time>
    # (`lightrft demo --resume` continues it instead: recipes/resuming.py)
    "logging.overwrite=true",
    # built-in arithmetic word problems; the model is asked for the bare number
    "data.train.difficulty=1",
    "data.train.num_builtin=2000",
    "data.train.instruction=Answer with just the number.",
    "data.train.system_prompt=Reply with only the final number.",
    "data.eval.difficulty=1",
    "data.eval.num_builtin=100",
    "data.eval.instruction=Answer with just the number.",
    "data.eval.system_prompt=Reply with only the final number.",
    # GRPO: 16 prompts x 4 samples of at most 16 tokens at temperature 0.6, full fine-tuning
    # in fp32; more prompts per step make a step's training reward a steadier mean, so a run
    # ends near its best step (docs/results.md, "Ending near the best step")
    "rollout.prompts_per_step=16",
    "rollout.n_samples_per_prompt=4",
    "rollout.max_new_tokens=16",
    "rollout.temperature=0.6",
    # the trainer's log-probs at temperature 1, not at the sampling temperature (the default,
    # docs/algorithms.md): the recipe's figures were measured so (docs/results.md, "The loss
    # at the sampling temperature")
    "algorithm.logprob_temperature=1.0",
    # an answer cut off at the 16-token limit earns nothing, so the math reward's last-number
    # fallback cannot pay cut-off restatements of the problem: the policy learns to finish
    # its answer (docs/results.md, "Why it did not learn reliably before")
    "reward.truncated_reward=0",
    # 15 steps: a seed whose samples all run into the 16-token limit at first earns no reward
    # until one finishes, and the steps after that wait are what it learns in
    # (docs/results.md, "Why 15 steps")
    "train.total_steps=15",
    "train.micro_batch_size=16",
    "optim.lr=5e-5",
    # cosine decay to a tenth: a constant lr keeps moving the policy after it has learned,
    # the decay holds it (docs/results.md, "Why it did not learn reliably before")
    "optim.schedule=cosine",
    "optim.min_lr_ratio=0.1",
    # held-out accuracy before the first step and after the last one only (a number above
    # any run's length): the initial policy is then the best evaluated state, the one a
    # collapse rollback returns to
    "eval.every=100",
    "eval.max_prompts=100",
    # a run whose entropy collapses early (entropy gone at a low reward, most groups
    # scoring alike: 3 seeds of 20 at 0.6) starts over from the initial weights at the full
    # lr with its steps given back, at most twice; the monitor's other collapse signals only
    # warn (docs/health.md, "Restarting a collapsed run"; docs/results.md, issue 47)
    "train.on_collapse=rollback",
    "train.on_collapse_signals=[early_entropy_collapse]",
    "train.rollback_lr_factor=1.0",
    "train.collapse_rollback.redo_steps=true",
    "checkpoint.every=5",
    # steps 5, 10 and 15 stay (a restarted run keeps its last three): `lightrft demo ttrl`
    # starts from step 5
    "checkpoint.keep_last=3",
]
"""The main job's settings on top of the grpo preset (``key=value`` arguments override them)."""

MAIN_JOB_RUN = "runs/demo"
"""The main job's run directory."""

MAIN_JOB_MODEL = f"{MAIN_JOB_RUN}/final_model"
"""Where ``lightrft demo`` leaves its trained model (``lightrft demo distill``'s teacher)."""


def run_main_job(args: argparse.Namespace, overrides: list[str]) -> int:
    """``lightrft demo [grpo]``: :data:`DEMO_OVERRIDES`, then ``overrides``."""
    from lightrft.entrypoints.jobs.demo import run_grpo_demo
    from lightrft.entrypoints.recipes.resuming import with_start_choice

    return run_grpo_demo(with_start_choice(DEMO_OVERRIDES, overrides), args.argv)


RECIPE = DemoRecipe(
    name="grpo",
    help="the main job: GRPO on built-in arithmetic problems (about 3-4 minutes on an idle "
    "2-core CPU), held-out greedy accuracy before and after",
    run=run_main_job,
)
