"""The policy side of `lightrft demo prm`: the warm-up that teaches the policy the worked format,
and the PRM rows labelled from that policy's own samples.

1. Warm-up: ``lightrft sft`` on worked chains of 1 to ``chain_length`` operations
   (:func:`~lightrft.adapters.datasets.chain_solutions.worked_chain_rows`). SmolLM2-135M-Instruct
   knows one-digit arithmetic but not the format: before it, its answers are sentences and
   copies of the instruction's example, with no step a checker (or a PRM) can judge.
2. Own rows: the warmed policy samples chains (``prm_samples`` each, at the RL temperature);
   every line of a sample is labelled by the exact checker
   (:func:`~lightrft.adapters.datasets.chain_solutions.line_labels`, Math-Shepherd's
   good-while-every-step-so-far-is-right labels) and the rows are written in the process-reward
   layout (``{"prompt", "steps", "labels"}``, :mod:`~lightrft.application.own_step_labels`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lightrft.adapters.datasets.chain_solutions import line_labels, worked_chain_rows
from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.jsonl_files import write_jsonl
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.datasets.synthetic_steps import chain_problems
from lightrft.application.own_step_labels import label_own_samples
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.recipes.rlhf import seed_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from lightrft.entrypoints.recipes.prm_options import PrmDemoOptions
    from lightrft.entrypoints.roots.judge_sampling import JudgeSampler

WARMUP_SEED = 7_777  # the warm-up chains' generator, apart from the RL and PRM prompts
OWN_TRAIN_SEED = 20_000  # the PRM's own samples: prompts apart from the RL ones
OWN_EVAL_SEED = 30_000  # its held-out own samples (not the RL held-out chains either)
PRM_BASE_SEED = 40_000  # the chains that train the PRM's backbone further


def prm_base_stage(
    policy: str | None, options: PrmDemoOptions, overrides: Sequence[str]
) -> dict[str, Any]:
    """The PRM's starting model: the warmed ``policy`` trained ``options.prm_base_steps`` SFT
    steps more on other worked chains (a checker of arithmetic must know it better than the
    policy whose steps it checks)."""
    return warmup_stage(
        policy, options, overrides, name="prm_base", steps=options.prm_base_steps,
        row_seed=PRM_BASE_SEED,
    )  # fmt: skip


def warmup_stage(
    model: str | None,
    options: PrmDemoOptions,
    overrides: Sequence[str],
    *,
    name: str = "warmup",
    steps: int | None = None,
    row_seed: int = WARMUP_SEED,
) -> dict[str, Any]:
    """SFT of ``model`` (None: the default model) on worked chains (drawn from ``row_seed``
    plus the run's seed) for ``steps`` (None: ``options.warmup_steps``) into ``run_dir/name``.
    Returns the trained model's path, the first and last loss and the wall time."""
    from lightrft.entrypoints.config.loading import load_sft_config
    from lightrft.entrypoints.jobs.sft import sft

    started = time.perf_counter()
    seed = seed_of(overrides)
    rows = worked_chain_rows(
        options.warmup_rows, row_seed + seed, options.chain_length, options.difficulty
    )
    data = options.run_dir / "data" / f"{name}.jsonl"
    write_jsonl(rows, data)
    config = load_sft_config(
        None,
        [
            f"sft.train_data.path={data}",
            "sft.eval_data=null",
            f"sft.total_steps={options.warmup_steps if steps is None else steps}",
            f"sft.batch_size={options.warmup_batch_size}",
            f"sft.micro_batch_size={options.warmup_micro_batch_size}",
            f"sft.seed={seed}",
            f"optim.lr={options.warmup_lr}",
            f"logging.run_dir={options.run_dir / name}",
            "checkpoint.every=null",
            "logging.progress=false",
            *([f"model.path={model}"] if model else []),
        ],
    )
    summary = sft(config, next_command=options.next_command)
    return {
        "path": str(options.run_dir / name / "final_model"),
        "steps": summary["steps"],
        "loss_first": summary.get("train_loss_first"),
        "loss_last": summary.get("train_loss_last"),
        "seconds": time.perf_counter() - started,
    }


def own_step_rows(
    sampler: JudgeSampler, path: Path, prompts: int, seed: int, options: PrmDemoOptions
) -> dict[str, Any]:
    """``prompts`` chains sampled ``options.prm_samples`` times each through ``sampler`` (the
    policy's tokenizer and HF engine), labelled line by line, written to ``path``; returns the
    count of rows and steps and the share of good steps."""
    problems = chain_problems(prompts, seed, options.chain_length, options.difficulty)
    source = InMemoryPromptSource(
        [{"prompt": p["prompt"], "reference": p["reference"]} for p in problems],
        sampler.tokenizer,
        prompt_format=PromptFormat(render="auto"),
        name="chains",
    )
    sampling = SamplingParams(
        n=options.prm_samples,
        temperature=options.sample_temperature,
        max_new_tokens=options.max_new_tokens,
        seed=seed,
    )
    labelled = label_own_samples(
        sampler.engine,
        [source[i] for i in range(len(source))],
        sampling,
        lambda index, steps: line_labels(steps, problems[index]["chain"]),
        separator=options.separator,
        batch_size=16,
    )
    rows = [
        {
            "prompt": problems[s.prompt_index]["prompt"],
            "steps": list(s.steps),
            "labels": ["+" if good else "-" for good in s.labels],
        }
        for s in labelled
    ]
    write_jsonl(rows, path)
    steps = sum(len(s.labels) for s in labelled)
    good = sum(sum(s.labels) for s in labelled)
    return {"rows": len(rows), "steps": steps, "good_step_share": good / steps if steps else 0.0}


def own_rows_stage(
    policy: str, options: PrmDemoOptions, overrides: Sequence[str]
) -> tuple[Path, Path, dict[str, Any]]:
    """The PRM's training and held-out rows from ``policy``'s own samples (the held-out ones
    on other prompts); returns both paths and their statistics."""
    from lightrft.entrypoints.roots.judge_sampling import judge_sampler

    started = time.perf_counter()
    seed = seed_of(overrides)
    data = options.run_dir / "data"
    train = data / "prm_train.jsonl"
    held_out = data / "prm_eval.jsonl"
    sampler = judge_sampler(policy)  # an HF engine over the policy's directory
    stats = {
        "train": own_step_rows(
            sampler,
            train,
            max(options.prm_rows // options.prm_samples, 1),
            OWN_TRAIN_SEED + seed,
            options,
        ),
        "eval": own_step_rows(
            sampler,
            held_out,
            max(options.prm_eval_rows // options.prm_samples, 1),
            OWN_EVAL_SEED + seed,
            options,
        ),
        "seconds": time.perf_counter() - started,
    }
    return train, held_out, stats
