"""`lightrft demo safe`: Safe RLHF on the embedded model, sized for a small CPU.

The synthetic task (:mod:`lightrft.adapters.datasets.safety_preferences`): arithmetic word
problems where answering *with the person's name* ("Ana has 16 cards now.") stands in for an
unsafe behaviour (repeating personal data). Stages:

1. a helpfulness reward model on preferences that favour the named answer over the plain one
   ("The answer is 16.") and both over unhelpful ones (``lightrft rm train``, score head only);
2. a cost model on Safe RLHF rows (the named answer is the more harmful one; safe/unsafe
   labels), trained with the sign term so that a cost > 0 reads as unsafe;
3. GRPO against the helpfulness model with the constraint ``reward.constraints`` on the cost
   model's violation rate (``cost: violation``; the limit bounds the fraction of samples the
   cost model flags); with ``constrained=False`` the same run without the constraint.

Held out (48 problems of the held-out split, 4 samples each at the rollout temperature):
``reward_before`` / ``reward_after`` (helpfulness model, normalized score) and
``cost_rate_before`` / ``cost_rate_after`` (fraction of answers that name a person, by a rule
source of weight 0: the ground truth, not the cost model). ``summary.json`` also holds
``cost_limit``, ``multiplier_final`` (null without the constraint), both models' held-out
accuracy and each stage's wall time.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets.jsonl_files import write_jsonl
from lightrft.adapters.datasets.preferences import PreferenceSpec
from lightrft.adapters.datasets.safety_preferences import NAME_PATTERN, cost_rows, helpfulness_rows
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.recipes.registry import DemoRecipe
from lightrft.entrypoints.recipes.rlhf import GRPO_OVERRIDES as RLHF_GRPO_OVERRIDES
from lightrft.entrypoints.recipes.rlhf import (
    INSTRUCTION,
    SYSTEM_PROMPT,
    RmDemoOptions,
    add_rm_demo_arguments,
    metric_rows,
    rm_demo_options,
    rm_train_options,
    seed_of,
)
from lightrft.entrypoints.recipes.stage_checks import check_stage, demo_run_dir
from lightrft.entrypoints.run_dir.guard import fresh_run_request, guard_run_directory

log = structlog.get_logger(__name__)

GRPO_OVERRIDES = [
    *RLHF_GRPO_OVERRIDES,  # the RLHF demo's task, prompts, batch and optimizer
    "train.total_steps=10",
    "eval.every=10",
    # the unsafe rate is a rate of the sampled behaviour: 4 samples per held-out prompt at
    # the rollout temperature, not one greedy answer
    "eval.n_samples=4",
    "eval.temperature=0.8",
]
"""GRPO settings (``key=value`` arguments override them)."""


@dataclass(frozen=True)
class SafeDemoOptions(RmDemoOptions):
    """Sizes of the model stages and the constraint."""

    run_dir: Path = Path("runs/demo_safe")
    seed: int = 0
    constrained: bool = True
    limit: float = 0.1  # the largest allowed violation rate
    # the multiplier starts at 0 and rises by dual ascent only while the cost model's
    # violation rate is above the limit: starting at 1 with step 2, the cost advantage
    # outweighed the helpfulness advantage from the first step and every sample collapsed onto
    # the safe copy of the instruction's placeholder ("The answer is N.") before any numeric
    # answer was found (docs/results.md, "Safe RLHF")
    multiplier_lr: float = 1.0
    init: float = 0.0
    helpful_model: Path | None = None  # trained before: skips stage 1
    cost_model: Path | None = None  # trained before: skips stage 2


def _train_model(
    name: str,
    rows: Sequence[dict[str, Any]],
    spec: PreferenceSpec,
    options: SafeDemoOptions,
    overrides: Sequence[str],
) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.reward_model import RmDataOptions, train_reward_model

    path = write_jsonl(rows, options.run_dir / "data" / f"{name}.jsonl")
    data = RmDataOptions(data=str(path), eval_fraction=0.25, spec=spec, system_prompt=SYSTEM_PROMPT)
    started = time.perf_counter()
    summary = train_reward_model(
        rm_train_options(options, name, data, overrides, seed=options.seed)
    )
    return {
        "held_out_accuracy": summary["eval/accuracy"],
        "held_out_sign_accuracy": summary.get("eval/sign_accuracy"),
        "held_out_pairs": summary["eval_pairs"],
        "seconds": time.perf_counter() - started,
        "path": summary["model"],
    }


def _sources(helpful: str, cost: str) -> str:
    return "reward.sources=" + json.dumps(
        [
            {"type": "scalar_rm", "name": "helpful", "path": helpful, "normalize": True},
            # raw scores: the cost model's sign is its safe/unsafe verdict
            {"type": "scalar_rm", "name": "cost", "path": cost, "weight": 0.0},
            {"type": "format", "name": "names_person", "pattern": NAME_PATTERN, "weight": 0.0},
        ]
    )


def _constraint(options: SafeDemoOptions) -> list[str]:
    if not options.constrained:
        return []
    constraint = {
        "source": "cost",
        "cost": "violation",
        "limit": options.limit,
        "multiplier_lr": options.multiplier_lr,
        "init": options.init,
    }
    return ["reward.constraints=" + json.dumps([constraint])]


def _grpo_words(
    models: dict[str, Any], options: SafeDemoOptions, overrides: Sequence[str]
) -> list[str]:
    return [
        *GRPO_OVERRIDES,
        f"train.seed={options.seed}",
        f"logging.run_dir={options.run_dir / 'grpo'}",
        _sources(models["helpful"]["path"], models["cost"]["path"]),
        *_constraint(options),
        *overrides,
    ]


def check_safe_demo(options: SafeDemoOptions, overrides: Sequence[str]) -> None:
    """Every flag and override, checked before the first stage (the GRPO stage's config
    with the models' paths to be)."""
    models = {
        name: {"path": str(given or options.run_dir / name)}
        for name, given in (("helpful", options.helpful_model), ("cost", options.cost_model))
    }
    check_stage("GRPO", _grpo_words(models, options, overrides))


def _grpo_stage(
    models: dict[str, Any], options: SafeDemoOptions, overrides: Sequence[str]
) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.training import train

    stage_dir = options.run_dir / "grpo"
    config = load_config(None, _grpo_words(models, options, overrides), algorithm="grpo")
    started = time.perf_counter()
    train(config, next_command=options.next_command)
    rows = metric_rows(stage_dir)
    evals = [row for row in rows if "eval/reward_mean" in row]
    trained = [row for row in rows if "constraint/cost/multiplier" in row]
    first, last = (evals[0], evals[-1]) if evals else ({}, {})
    return {
        "reward_before": first.get("eval/reward/helpful/mean"),
        "reward_after": last.get("eval/reward/helpful/mean"),
        "cost_rate_before": first.get("eval/reward/names_person/mean"),
        "cost_rate_after": last.get("eval/reward/names_person/mean"),
        "cost_score_before": first.get("eval/reward/cost/mean"),
        "cost_score_after": last.get("eval/reward/cost/mean"),
        "multiplier_final": trained[-1]["constraint/cost/multiplier"] if trained else None,
        "train_violation_rate_last": trained[-1]["constraint/cost/violation_rate"]
        if trained
        else None,
        "grpo_seconds": time.perf_counter() - started,
    }


def run_safe_demo(options: SafeDemoOptions, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Trains both models (unless given), then GRPO; returns (and writes) the summary."""
    check_safe_demo(options, overrides)
    with guard_run_directory(fresh_run_request(options.run_dir, options.overwrite)):
        return _run_stages(options, overrides)


def _given(path: Path) -> dict[str, Any]:
    return {"path": str(path), "trained_here": False}


def _run_stages(options: SafeDemoOptions, overrides: Sequence[str]) -> dict[str, Any]:
    started = time.perf_counter()
    rows = {"seed": options.seed, "instruction": INSTRUCTION}
    helpful = (
        _given(options.helpful_model)
        if options.helpful_model is not None
        else _train_model(
            "helpful",
            helpfulness_rows(options.rm_pairs, **rows),
            PreferenceSpec(),
            options,
            overrides,
        )
    )
    cost_spec = PreferenceSpec(chosen_safe_key="chosen_safe", rejected_safe_key="rejected_safe")
    cost = (
        _given(options.cost_model)
        if options.cost_model is not None
        else _train_model(
            "cost", cost_rows(options.rm_pairs, **rows), cost_spec, options, overrides
        )
    )
    models = {"helpful": helpful, "cost": cost}
    summary: dict[str, Any] = {
        "constrained": options.constrained,
        "cost_limit": options.limit,
        "seed": options.seed,
        **_grpo_stage(models, options, overrides),
        "models": models,
    }
    summary["seconds"] = time.perf_counter() - started
    (options.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("demo.safe.done", seconds=summary["seconds"])
    return summary


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rm_demo_arguments(parser, str(SafeDemoOptions.run_dir))
    parser.add_argument(
        "--no-constraint", action="store_true", help="the same GRPO run without the limit"
    )
    parser.add_argument(
        "--cost-limit", type=float, default=0.1, help="largest allowed violation rate"
    )
    parser.add_argument("--helpful-model", type=Path, default=None, help="skip its training")
    parser.add_argument("--cost-model", type=Path, default=None, help="skip its training")


def _run(args: argparse.Namespace, overrides: list[str]) -> int:
    if not args.no_constraint and not 0.0 <= args.cost_limit <= 1.0:  # NaN included
        raise ConfigError(
            f"--cost-limit {args.cost_limit}: the largest allowed violation rate must lie in [0, 1]"
        )
    run_dir, overrides = demo_run_dir(overrides, args.run_dir, SafeDemoOptions.run_dir)
    options = SafeDemoOptions(
        run_dir=run_dir,
        seed=seed_of(overrides),
        constrained=not args.no_constraint,
        limit=args.cost_limit,
        helpful_model=args.helpful_model,
        cost_model=args.cost_model,
        **rm_demo_options(args),
    )
    # the seed is the demo's own (both models and GRPO use it)
    overrides = [o for o in overrides if not o.startswith("train.seed=")]
    summary = run_safe_demo(options, overrides)
    print(json.dumps(summary, indent=2))
    print(
        f"held-out helpfulness {summary['reward_before']:+.3f} -> {summary['reward_after']:+.3f}; "
        f"unsafe rate {summary['cost_rate_before']:.3f} -> {summary['cost_rate_after']:.3f} "
        f"(limit {summary['cost_limit']}, multiplier {summary['multiplier_final']})"
    )
    return 0


RECIPE = DemoRecipe(
    name="safe",
    help="Safe RLHF: helpfulness and cost models, then GRPO under a cost limit",
    run=_run,
    add_arguments=_add_arguments,
)

__all__ = ["GRPO_OVERRIDES", "RECIPE", "SafeDemoOptions", "run_safe_demo"]
