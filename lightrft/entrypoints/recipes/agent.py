"""`lightrft demo agent`: multi-turn RL with a calculator tool on the embedded model.

The task (:mod:`lightrft.adapters.datasets.tool_arithmetic`) is a 3-digit times a 2-digit
number, which SmolLM2-135M-Instruct almost never multiplies right by itself; the calculator
tool makes it easy. The base model does not emit tool calls on its own, so the demo starts
with a short SFT warm-up (``lightrft sft``) on generated chats of a teacher that calls the
calculator on only ``sft_tool_fraction`` of them (multi-turn chats with ``tool`` messages) and
answers the others at once: the warm-up teaches both behaviours, the student cannot copy the
second, and which one pays off is what GRPO with the tool environment
(``rollout.environment=tools``, reward: the environment's, 1 for a right final answer) has
to find. Three held-out measurements (greedy, the same episode limits): the base model,
after the SFT warm-up (the GRPO stage's step-0 evaluation), after RL; each with the success
rate and the tool-use rate (episodes that called a tool at least once).

The run directory is guarded like every run directory: a previous demo there is refused, or
moved aside to ``<run_dir>.old-<time>`` with ``overwrite`` (what ``lightrft demo agent``
does). Stages write ``base_eval/``, ``sft/`` and ``rl/`` under it, and
``summary.json`` with ``eval_accuracy_before`` (the base model), ``eval_accuracy_after``
(after SFT and RL), ``eval_accuracy_after_sft`` and the ``tool_use_rate_*`` of each, plus each
stage's wall time. ``rl/trajectories.html`` shows the turns, tool calls and observations.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.jsonl_files import write_jsonl
from lightrft.adapters.datasets.tool_arithmetic import SYSTEM_PROMPT, tool_problems, warm_up_traces
from lightrft.entrypoints.config.loading import load_config, load_sft_config
from lightrft.entrypoints.recipes.registry import DemoRecipe
from lightrft.entrypoints.recipes.stage_checks import check_stage, demo_run_dir
from lightrft.entrypoints.run_dir.guard import fresh_run_request, guard_run_directory

ENVIRONMENT = "{type: tools, tools: [calculator], extractors: [answer_is, last_number]}"
AGENT_PROGRAM = Path(__file__).parent / "agent_programs" / "calculator_agent.py"
"""The black-box agent of ``demo agent --gateway`` (httpx and the OpenAI protocol only)."""


@dataclass(frozen=True)
class AgentDemoOptions:
    """Sizes of the demo (aimed at about 10 minutes on an idle 2-core CPU; measured so far
    only on a loaded one, docs/results.md)."""

    run_dir: Path = Path("runs/demo_agent")
    seed: int = 0
    train_rows: int = 512
    eval_rows: int = 24
    sft_rows: int = 32
    sft_tool_fraction: float = 0.25  # warm-up chats that call the calculator
    sft_epochs: int = 1
    sft_lr: float = 5e-5
    model_path: Path | None = None  # None: the embedded model
    gateway: bool = False  # episodes by the black-box agent program through the gateway
    overwrite: bool = False  # move a previous demo in run_dir aside (else it is refused)


def _model(options: AgentDemoOptions) -> list[str]:
    return [] if options.model_path is None else [f"model.path={options.model_path}"]


def episode_overrides(options: AgentDemoOptions, train: Path, held_out: Path) -> list[str]:
    """Data, environment and limits shared by every stage's config."""
    return [
        *_model(options),
        f"data.train.path={train}",
        f"data.eval.path={held_out}",
        f"data.train.system_prompt={SYSTEM_PROMPT}",
        f"data.eval.system_prompt={SYSTEM_PROMPT}",
        "rollout.max_new_tokens=40",
        *(gateway_overrides() if options.gateway else environment_overrides()),
        f"eval.max_prompts={options.eval_rows}",
        "logging.progress=false",
        "logging.overwrite=true",
    ]


def environment_overrides() -> list[str]:
    """Episodes in the built-in tool environment."""
    return [
        f"rollout.environment={ENVIRONMENT}",
        "rollout.max_turns=3",
        "rollout.agent.max_response_tokens=160",
        # a batch's episodes share one clock: on a busy 2-core CPU one turn of 32 episodes
        # can take minutes, and the default 300 s would cut episodes for the machine's load
        "rollout.agent.episode_timeout_s=3600",
        # likewise one calculator step (the default 30 s is missed on a thrashing machine,
        # docs/results.md, "Multi-turn agent")
        "rollout.agent.step_timeout_s=300",
        "reward.sources=[{type: environment}]",
    ]


def gateway_overrides() -> list[str]:
    """Episodes of the black-box calculator agent through the rollout gateway (at most 3
    calls of 40 tokens, like the environment's 3 turns); its final answer is graded by the
    math reward with the environment's extractors. Deadlines as generous as the
    environment's, for a loaded CPU."""
    program = f"[{sys.executable}, {AGENT_PROGRAM}]"
    return [
        f"rollout.agent.gateway={{command: {program}, reward: sources, max_calls: 3, "
        "episode_timeout_s: 3600, call_timeout_s: 3600}",
        "reward.sources=[{type: math, extractors: [answer_is, last_number]}]",
    ]


RL_OVERRIDES = [
    "rollout.prompts_per_step=4",
    "rollout.n_samples_per_prompt=4",
    "rollout.temperature=1.0",
    "train.total_steps=6",
    "train.micro_batch_size=8",
    "optim.lr=3e-5",
    "eval.every=6",
    "checkpoint.every=null",
    "checkpoint.export_final=false",
]
"""GRPO from the SFT model (``key=value`` arguments override them)."""


def _eval_rows(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [row for row in map(json.loads, lines) if "eval/accuracy" in row]


def _rl_words(options: AgentDemoOptions, overrides: Sequence[str]) -> list[str]:
    """The RL stage's settings: the SFT warm-up's model (at its path once it ran), then the
    user's overrides."""
    out = options.run_dir
    return [
        *episode_overrides(options, out / "train.jsonl", out / "heldout.jsonl"),
        *RL_OVERRIDES,
        f"model.path={out / 'sft' / 'final_model'}",
        f"logging.run_dir={out / 'rl'}",
        f"train.seed={options.seed}",
        *overrides,
    ]


def run_agent_demo(options: AgentDemoOptions, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Runs the three stages in the guarded run directory; returns (and writes) the summary.
    Every override is checked first (the RL stage's config), before a previous demo is moved
    aside and before the base evaluation and the SFT warm-up run."""
    check_stage("RL", _rl_words(options, overrides))
    with guard_run_directory(fresh_run_request(options.run_dir, options.overwrite)):
        return _run_stages(options, overrides)


def _run_stages(options: AgentDemoOptions, overrides: Sequence[str]) -> dict[str, Any]:
    from lightrft.adapters.report import render_report
    from lightrft.entrypoints.jobs.eval import evaluate
    from lightrft.entrypoints.jobs.sft import sft
    from lightrft.entrypoints.jobs.training import train

    out = options.run_dir
    out.mkdir(parents=True, exist_ok=True)
    train_rows = tool_problems(options.train_rows, seed=0)
    train_path = write_jsonl(train_rows, out / "train.jsonl")
    eval_path = write_jsonl(tool_problems(options.eval_rows, seed=1), out / "heldout.jsonl")
    warm_up_rows = train_rows[-options.sft_rows :]
    traces = warm_up_traces(warm_up_rows, options.sft_tool_fraction, seed=options.seed)
    traces_path = write_jsonl(traces, out / "tool_traces.jsonl")
    shared = episode_overrides(options, train_path, eval_path)
    rl_config = check_stage("RL", _rl_words(options, overrides))
    times: dict[str, float] = {}

    start = time.monotonic()
    base = evaluate(load_config(None, [*shared, f"logging.run_dir={out / 'base_eval'}"]))
    times["base_eval_s"] = time.monotonic() - start

    start = time.monotonic()
    sft_config = load_sft_config(
        None,
        [
            *_model(options),
            f"logging.run_dir={out / 'sft'}",
            "logging.overwrite=true",
            "logging.progress=false",
            f"sft.train_data.path={traces_path}",
            "sft.eval_data=null",
            f"sft.epochs={options.sft_epochs}",
            "sft.batch_size=8",
            "sft.micro_batch_size=8",
            f"sft.seed={options.seed}",
            f"optim.lr={options.sft_lr}",
            "checkpoint.every=null",
        ],
    )
    sft_summary = sft(sft_config)
    # the demo is never resumed: the warm-up's resume checkpoint (weights and optimizer,
    # 1.6 GB for the embedded model) is not needed once its final_model is exported
    shutil.rmtree(out / "sft" / "checkpoints", ignore_errors=True)
    times["sft_s"] = time.monotonic() - start

    start = time.monotonic()
    train(rl_config)
    times["rl_s"] = time.monotonic() - start
    render_report(out / "rl")
    evals = _eval_rows(out / "rl")
    first, last = evals[0], evals[-1]
    tool_use = "eval/agent/tool_use_rate"
    summary: dict[str, Any] = {
        "seed": options.seed,
        "episodes": "gateway" if options.gateway else "environment",
        "eval_accuracy_before": base["metrics"]["eval/accuracy"],
        "eval_accuracy_after_sft": first["eval/accuracy"],
        "eval_accuracy_after": last["eval/accuracy"],
        "tool_use_rate_before": base["metrics"].get(tool_use, 0.0),
        "tool_use_rate_after_sft": first.get(tool_use, 0.0),
        "tool_use_rate_after": last.get(tool_use, 0.0),
        "eval_prompts": options.eval_rows,
        "sft_rows": options.sft_rows,
        "sft_tool_fraction": options.sft_tool_fraction,
        "sft_steps": sft_summary.get("steps"),
        "rl_steps": rl_config.train.total_steps,
        "times": {k: round(v, 1) for k, v in times.items()},
        "run_dir": str(out),
        "report": str(out / "rl" / "report" / "report.html"),
        "trajectories": str(out / "rl" / "report" / "trajectories.html"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help=f"output directory (default {AgentDemoOptions.run_dir}; logging.run_dir=DIR too)",
    )
    parser.add_argument(
        "--gateway",
        action="store_true",
        help="run the episodes through the rollout gateway: a black-box agent program "
        "(httpx and the OpenAI chat-completions protocol, no LightRFT import) per episode",
    )


def _run(args: argparse.Namespace, overrides: list[str]) -> int:
    # the seed and the run directory are the demo's own (its stages live under it)
    seed = [int(o.split("=", 1)[1]) for o in overrides if o.startswith("train.seed=")]
    run_dir, rest = demo_run_dir(overrides, args.run_dir, AgentDemoOptions.run_dir)
    rest = [o for o in rest if not o.startswith("train.seed=")]
    options = AgentDemoOptions(
        run_dir=run_dir,
        seed=(seed or [0])[-1],
        overwrite=True,  # like the other demos: running it again moves the old run aside
        gateway=bool(getattr(args, "gateway", False)),
    )
    summary = run_agent_demo(options, rest)
    print(json.dumps(summary, indent=2))
    print(
        f"held-out success: before {summary['eval_accuracy_before']:.3f} -> after SFT "
        f"{summary['eval_accuracy_after_sft']:.3f} -> after RL {summary['eval_accuracy_after']:.3f}"
        f"; tool use: {summary['tool_use_rate_before']:.3f} -> "
        f"{summary['tool_use_rate_after_sft']:.3f} -> {summary['tool_use_rate_after']:.3f}"
    )
    return 0


RECIPE = DemoRecipe(
    name="agent",
    help="multi-turn RL with a calculator tool: an SFT warm-up, then GRPO in the tool environment",
    run=_run,
    add_arguments=_add_arguments,
)
