"""`lightrft demo`: the main job's recipe, `lightrft train grpo` sized for a 2-core CPU (about
3 minutes idle) on the embedded SmolLM2-135M-Instruct; run by :mod:`lightrft.entrypoints.jobs.demo`."""

from __future__ import annotations

DEMO_OVERRIDES = [
    "logging.run_dir=runs/demo",
    # running the demo again starts over: the previous one moves to runs/demo.old-<UTC time>
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
    # GRPO: 8 prompts x 8 samples of at most 16 tokens, full fine-tuning in fp32
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=8",
    "rollout.max_new_tokens=16",
    "rollout.temperature=0.8",
    # an answer cut off at the 16-token limit earns nothing: without this the math reward's
    # last-number fallback paid restatements of the problem that happened to end on the
    # right number, and one seed in five drifted into them (held-out 0.16 -> 0.07); with it
    # the policy learns to finish its answer (docs/results.md, recipe study)
    "reward.truncated_reward=0",
    "train.total_steps=10",
    "train.micro_batch_size=16",
    "optim.lr=5e-5",
    # cosine decay to a tenth: constant 5e-5 kept moving the policy after it had learned
    # (seed 1: training reward 0.72 at step 5, 0.44 at step 10; held-out 0.55), the decay
    # holds it (0.81 at step 7, 0.62-0.75 after; held-out 0.65)
    "optim.schedule=cosine",
    "optim.min_lr_ratio=0.1",
    "eval.every=10",
    "eval.max_prompts=100",
    "checkpoint.every=5",
]
"""The main job's settings on top of the grpo preset (``key=value`` arguments override them)."""

MAIN_JOB_MODEL = "runs/demo/final_model"
"""Where ``lightrft demo`` leaves its trained model (``lightrft demo ttrl`` starts there)."""
