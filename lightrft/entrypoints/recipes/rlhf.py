"""`lightrft demo rlhf`: the RLHF main job on the embedded model, sized for a small CPU.

1. Reward model: the built-in synthetic preference set (arithmetic questions; the chosen
   answer states the number as ``The answer is N.``, the rejected one is the bare number, a
   rambling guess or a refusal), prompts rendered exactly as the RL prompts below; trained
   with ``lightrft rm train`` (by default only the score head, on the frozen backbone, which
   is what fits a 2-core CPU); held-out preference accuracy reported.
2. GRPO against that reward model alone (the answer-format rule and the math answer are
   measured with weight 0: held-out rule metrics the policy is not paid for).
3. GRPO against the reward model plus the math-answer rule reward (weight 1 each).

Every stage's wall time and the held-out metrics before/after go into ``summary.json``.
``serve_rm`` serves the reward model over HTTP on 127.0.0.1 and scores through the
``remote`` reward source instead of in-process.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from lightrft.application.reward_model_training import RewardTrainParams
from lightrft.entrypoints.config.loading import last_override, load_config
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.recipes.registry import DemoRecipe
from lightrft.entrypoints.recipes.stage_checks import check_stage, demo_run_dir
from lightrft.entrypoints.run_dir.guard import fresh_run_request, guard_run_directory

if TYPE_CHECKING:
    from lightrft.entrypoints.jobs.reward_model import RmDataOptions, RmTrainOptions

log = structlog.get_logger(__name__)

SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."
# the format is asked for but not shown in full: the base model starts about 1 answer in 50
# with exactly "The answer is N." (measured on 48 samples), and the reward model, trained on
# preferences for that form, is what teaches it
INSTRUCTION = "Reply with one sentence, The answer is N."
ANSWER_PATTERN = r"\s*The answer is -?\d+\.\s*"
# placeholder / preamble: the answer with a letter copied from the instruction, and the
# answer after filler, are rejected too; without them GRPO found those hacks of the reward
# model (docs/results.md, "RLHF")
KINDS = ("bare", "ramble", "refuse", "placeholder", "preamble")

GRPO_OVERRIDES = [
    "data.train.difficulty=1",
    "data.train.num_builtin=2000",
    f"data.train.instruction={INSTRUCTION}",
    f"data.train.system_prompt={SYSTEM_PROMPT}",
    "data.eval.difficulty=1",
    "data.eval.num_builtin=48",
    f"data.eval.instruction={INSTRUCTION}",
    f"data.eval.system_prompt={SYSTEM_PROMPT}",
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=8",
    "rollout.max_new_tokens=16",
    "rollout.temperature=0.8",
    # its figures (docs/results.md) were measured with the trainer's log-probs at temperature
    # 1, before the sampling-temperature default (docs/algorithms.md); not re-measured yet
    "algorithm.logprob_temperature=1.0",
    # an unfinished answer (cut at the 16-token limit) earns less than any finished one
    # (reward-model scores are normalized to mean 0, std 1 on the training pairs)
    "reward.truncated_reward=-1",
    "train.total_steps=8",
    "train.micro_batch_size=16",
    "optim.lr=5e-5",
    "eval.every=8",
    "eval.max_prompts=48",
    "checkpoint.every=null",
    "checkpoint.export_final=false",
    "logging.progress=false",
]
"""GRPO settings of both RL stages (``key=value`` arguments override them)."""


@dataclass(frozen=True)
class RmDemoOptions:
    """What the demos that train reward models before GRPO share (``demo rlhf``, ``demo safe``):
    the reward models' sizes and the demo's directory."""

    run_dir: Path  # each demo names its own
    rm_pairs: int = 160  # rows of each reward model's data (a quarter held out)
    rm_epochs: int = 2
    rm_lr: float = 2e-3
    overwrite: bool = False  # move a previous demo in run_dir aside (else it is refused)
    next_command: NextCommand = field(default_factory=NextCommand)


@dataclass(frozen=True)
class RlhfDemoOptions(RmDemoOptions):
    """Sizes of the reward-model stage and how the reward model is reached."""

    run_dir: Path = Path("runs/demo_rlhf")
    rm_train_backbone: bool = False
    serve_rm: bool = False
    rm_model: Path | None = None  # a reward model trained before: skips stage 1


def model_path_of(overrides: Sequence[str]) -> str | None:
    """The last ``model.path=`` override (the policy's model; reward models start from it)."""
    return last_override(overrides, "model.path")


def seed_of(overrides: Sequence[str]) -> int:
    """The last ``train.seed=`` override (0 when none): the seed of a demo's every stage."""
    return int(last_override(overrides, "train.seed") or 0)


def rm_train_options(
    options: RmDemoOptions,
    name: str,
    data: RmDataOptions,
    overrides: Sequence[str],
    *,
    seed: int,
    train_backbone: bool = False,
) -> RmTrainOptions:
    """A demo's reward model ``run_dir/name``: ``lightrft rm train`` from the policy's model,
    batches of 16 pairs, pairs cut at 256 tokens, scores normalized on 64 training pairs."""
    from lightrft.entrypoints.jobs.reward_model import RmTrainOptions

    return RmTrainOptions(
        output=options.run_dir / name,
        model=model_path_of(overrides),
        data=data,
        train=RewardTrainParams(
            batch_size=16, micro_batch_size=16, epochs=options.rm_epochs, seed=seed
        ),
        lr=options.rm_lr,
        max_length=256,
        train_backbone=train_backbone,
        normalize_pairs=64,
        next_command=options.next_command,
    )


def _rm_stage(options: RlhfDemoOptions, overrides: Sequence[str]) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.reward_model import RmDataOptions, train_reward_model

    data = RmDataOptions(
        num_synthetic=options.rm_pairs,
        synthetic_kinds=KINDS,
        synthetic_instruction=INSTRUCTION,
        system_prompt=SYSTEM_PROMPT,
        eval_fraction=0.25,
    )
    rm = rm_train_options(
        options,
        "rm",
        data,
        overrides,
        seed=seed_of(overrides),
        train_backbone=options.rm_train_backbone,
    )
    return train_reward_model(rm)


def _sources(rm_source: dict[str, Any], with_rule: bool) -> str:
    fmt = {"type": "format", "name": "answer_format", "pattern": ANSWER_PATTERN, "weight": 0.0}
    math = {"type": "math", "name": "math", "weight": 1.0 if with_rule else 0.0}
    return "reward.sources=" + json.dumps([rm_source, fmt, math])


@contextmanager
def _reward_model_source(rm_dir: Path, serve: bool) -> Iterator[dict[str, Any]]:
    """The ``reward.sources`` entry of the trained reward model (served over HTTP if asked)."""
    if not serve:
        yield {"type": "scalar_rm", "path": str(rm_dir), "name": "rm", "normalize": True}
        return
    import torch

    from lightrft.adapters.reward_models import HfScalarRewardModel
    from lightrft.adapters.reward_service import BackgroundServer, create_app

    model = HfScalarRewardModel.from_pretrained(
        rm_dir, torch.device("cpu"), name="rm", normalize=True
    )
    with BackgroundServer(create_app(model)) as server:
        yield {"type": "remote", "url": server.url, "name": "rm"}


def metric_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of a stage's ``metrics.jsonl`` (none before it exists)."""
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _eval_rows(run_dir: Path) -> list[dict[str, Any]]:
    return [row for row in metric_rows(run_dir) if "eval/reward_mean" in row]


def _before_after(run_dir: Path) -> dict[str, Any]:
    rows = _eval_rows(run_dir)
    if not rows:
        return {}
    keys = ["eval/reward/rm/mean", "eval/reward/answer_format/mean", "eval/reward/math/mean"]
    return {
        key.removeprefix("eval/reward/").removesuffix("/mean"): {
            "before": rows[0].get(key),
            "after": rows[-1].get(key),
        }
        for key in keys
    }


def _grpo_words(
    stage_dir: Path, rm_source: dict[str, Any], with_rule: bool, overrides: Sequence[str]
) -> list[str]:
    return [
        *GRPO_OVERRIDES,
        f"logging.run_dir={stage_dir}",
        _sources(rm_source, with_rule),
        *overrides,
    ]


def check_rlhf_demo(options: RlhfDemoOptions, overrides: Sequence[str]) -> None:
    """Every override, checked before the reward model trains (both GRPO stages' configs,
    the reward model at the path it will have)."""
    rm = {"type": "scalar_rm", "path": str(options.rm_model or options.run_dir / "rm")}
    for name, with_rule in (("grpo_rm", False), ("grpo_rm_rule", True)):
        check_stage(name, _grpo_words(options.run_dir / name, rm, with_rule, overrides))


def _grpo_stage(
    name: str,
    rm_source: dict[str, Any],
    with_rule: bool,
    options: RlhfDemoOptions,
    overrides: Sequence[str],
) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.training import train

    stage_dir, next_command = options.run_dir / name, options.next_command
    config = load_config(None, _grpo_words(stage_dir, rm_source, with_rule, overrides), "grpo")
    started = time.perf_counter()
    summary = train(config, next_command=next_command)
    return {
        "steps": summary["steps"],
        "seconds": time.perf_counter() - started,
        "eval": _before_after(stage_dir),
    }


def run_rlhf_demo(options: RlhfDemoOptions, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Runs the three stages; returns (and writes) the summary.

    ``run_dir`` is guarded like every run directory
    (:mod:`~lightrft.entrypoints.run_dir.guard`): locked for the whole demo, and a previous demo
    there is refused unless ``overwrite`` moves it aside.
    """
    check_rlhf_demo(options, overrides)
    with guard_run_directory(fresh_run_request(options.run_dir, options.overwrite)):
        return _run_stages(options, overrides)


def _run_stages(options: RlhfDemoOptions, overrides: Sequence[str]) -> dict[str, Any]:
    started = time.perf_counter()
    if options.rm_model is not None:
        reward_model: dict[str, Any] = {"path": str(options.rm_model), "trained_here": False}
    else:
        rm = _rm_stage(options, overrides)
        reward_model = {
            "held_out_accuracy": rm["eval/accuracy"],
            "held_out_margin_mean": rm["eval/margin_mean"],
            "train_pairs": rm["train_pairs"],
            "held_out_pairs": rm["eval_pairs"],
            "seconds": time.perf_counter() - started,
            "path": rm["model"],
            "trained_here": True,
        }
    summary: dict[str, Any] = {"reward_model": reward_model}
    with _reward_model_source(Path(reward_model["path"]), options.serve_rm) as source:
        summary["grpo_rm"] = _grpo_stage("grpo_rm", source, False, options, overrides)
        summary["grpo_rm_rule"] = _grpo_stage("grpo_rm_rule", source, True, options, overrides)
    summary["seconds"] = time.perf_counter() - started
    summary["served"] = options.serve_rm
    (options.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("demo.rlhf.done", seconds=summary["seconds"])
    return summary


def add_rm_demo_arguments(parser: argparse.ArgumentParser, default_run_dir: str) -> None:
    """The flags of :class:`RmDemoOptions` (``demo rlhf``, ``demo safe``)."""
    parser.add_argument(
        "--rm-pairs", type=int, default=160, help="synthetic pairs of each reward model"
    )
    parser.add_argument("--rm-epochs", type=int, default=2, help="reward-model epochs")
    parser.add_argument("--rm-lr", type=float, default=2e-3, help="reward-model learning rate")
    parser.add_argument(
        "--run-dir", type=Path, default=None, help=f"output directory (default {default_run_dir})"
    )


def rm_demo_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`RmDemoOptions` fields from the parsed flags (the run directory aside)."""
    return {
        "rm_pairs": args.rm_pairs,
        "rm_epochs": args.rm_epochs,
        "rm_lr": args.rm_lr,
        "overwrite": True,  # like the GRPO demo: running it again starts over, the old run aside
        "next_command": NextCommand(args.argv, reruns_as_typed=True),
    }


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rm_demo_arguments(parser, str(RlhfDemoOptions.run_dir))
    parser.add_argument(
        "--rm-full", action="store_true", help="train the whole reward model, not the head"
    )
    parser.add_argument("--serve-rm", action="store_true", help="score over HTTP")
    parser.add_argument(
        "--rm-model", type=Path, default=None, help="a trained reward model: skip its training"
    )


def _run(args: argparse.Namespace, overrides: list[str]) -> int:
    run_dir, overrides = demo_run_dir(overrides, args.run_dir, RlhfDemoOptions.run_dir)
    options = RlhfDemoOptions(
        run_dir=run_dir,
        rm_train_backbone=args.rm_full,
        serve_rm=args.serve_rm,
        rm_model=args.rm_model,
        **rm_demo_options(args),
    )
    summary = run_rlhf_demo(options, overrides)
    print(json.dumps(summary, indent=2))
    accuracy = summary["reward_model"].get("held_out_accuracy")
    if accuracy is not None:
        print(f"reward model held-out accuracy: {accuracy:.3f}")
    return 0


RECIPE = DemoRecipe(
    name="rlhf",
    help="a reward model from synthetic preferences, then GRPO against it (alone, then with "
    "the math rule)",
    run=_run,
    add_arguments=_add_arguments,
)

__all__ = ["GRPO_OVERRIDES", "RECIPE", "RlhfDemoOptions", "RmDemoOptions", "run_rlhf_demo"]
