"""Synchronous vs one-step-off vs asynchronous rollouts on the main job: generated tokens/s,
idle time of each side, staleness, and the learning curve (held-out accuracy after N steps).

Run: ``.venv/bin/python bench/bench_async.py`` (tens of minutes on 2 cores; ``--steps`` and
``--workloads`` shorten it). Each side is a fresh ``lightrft train grpo`` run in its own
subprocess, with the main job's recipe (``lightrft demo``: the embedded SmolLM2-135M-Instruct,
arithmetic problems, 8 prompts x 8 samples) and only the mode changed:

- ``sync``: today's cycle;
- ``one_step_off``: colocated, the batch of step k+1 generated with the policy of step k
  (time-sliced: nothing overlaps, the schedule only);
- ``async``: colocated with ``max_staleness`` 2 (batches up to two versions old);
- ``one_step_off_split``: the engine in its own process (``rollout.placement=split``), the
  trainer and the engine each with half of ``--threads``, a producer thread filling the
  queue while the trainer trains;
- ``async_split``: the same with ``max_staleness`` 2.

Workloads: ``main`` is the main job (<= 16 new tokens, evaluated before and after on the
100 held-out problems), ``long`` a long-generation one (4 prompts x 4 samples x <= 128
tokens, no evaluation). One markdown table (``--json``: raw numbers). Trailing ``key=value``
arguments override every side (``model.path=DIR`` runs another model, e.g. a tiny one for a
smoke test). On a 2-core CPU
overlap cannot add compute: the two processes of a split side share the same cores, so
expect no speed-up here; the idle columns show what overlap would hide on separate devices.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {
    "sync": ["rollout.mode=sync"],
    "one_step_off": ["rollout.mode=one_step_off"],
    "async": ["rollout.mode=async", "rollout.max_staleness=2"],
    "one_step_off_split": ["rollout.mode=one_step_off", "rollout.placement=split"],
    "async_split": ["rollout.mode=async", "rollout.max_staleness=2", "rollout.placement=split"],
}
WORKLOADS = {
    "main": [],
    "long": [
        "rollout.prompts_per_step=4",
        "rollout.n_samples_per_prompt=4",
        "rollout.max_new_tokens=128",
        "eval.every=null",
        "data.eval=null",
    ],
}


def run_side(
    mode: str, workload: str, steps: int, threads: int, run_dir: Path, extra: list[str]
) -> dict[str, float]:
    """Trains one side in this process; returns its figures."""
    import torch

    from lightrft.entrypoints.config.loading import load_config
    from lightrft.entrypoints.jobs.training import train
    from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES

    split = "rollout.placement=split" in MODES[mode]
    trainer_threads = max(1, threads // 2) if split else threads
    torch.set_num_threads(trainer_threads)
    overrides = [
        *DEMO_OVERRIDES,
        *WORKLOADS[workload],
        *MODES[mode],
        f"train.total_steps={steps}",
        f"logging.run_dir={run_dir}",
        "logging.progress=false",
        "checkpoint.every=null",
        "checkpoint.export_final=false",
        *extra,
    ]
    if split:
        overrides.append(f"rollout.engine_threads={max(1, threads - trainer_threads)}")
    if workload == "main":
        overrides.append(f"eval.every={steps}")
    started = time.perf_counter()
    train(load_config(None, overrides, algorithm="grpo"))
    wall = time.perf_counter() - started
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps_rows = [r for r in rows if "time/step_s" in r]
    step_s = sum(r["time/step_s"] for r in steps_rows)
    tokens = sum(r["rollout/samples"] * r["response_length/mean"] for r in steps_rows)
    evals = [r["eval/accuracy"] for r in rows if "eval/accuracy" in r]

    def total(key: str) -> float:
        return sum(r.get(key, 0.0) for r in steps_rows)

    return {
        "wall_s": wall,
        "train_s": step_s,
        "generated_tokens": tokens,
        "tokens_per_s": tokens / step_s if step_s else 0.0,
        "eval_before": evals[0] if evals else float("nan"),
        "eval_after": evals[-1] if len(evals) > 1 else float("nan"),
        "reward_last3": sum(r["reward/mean"] for r in steps_rows[-3:]) / min(3, len(steps_rows)),
        "staleness_mean": total("async/staleness_mean") / len(steps_rows),
        "trainer_wait_s": total("async/trainer_wait_s"),
        "producer_idle_s": total("async/producer_idle_s"),
    }


def _side_in_subprocess(
    mode: str, workload: str, steps: int, threads: int, root: Path, extra: list[str]
) -> dict[str, float]:
    out = root / f"{workload}-{mode}.json"
    command = [
        sys.executable,
        __file__,
        "--side",
        mode,
        "--workloads",
        workload,
        "--steps",
        str(steps),
        "--threads",
        str(threads),
        "--out",
        str(out),
        "--root",
        str(root),
        *extra,
    ]
    path = os.pathsep.join(x for x in (os.getcwd(), os.environ.get("PYTHONPATH")) if x)
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise RuntimeError(f"side {workload}/{mode} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.read_text())
    return result


def _table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    head = (
        "| workload | mode | tokens/s | train s | held-out before -> after | reward last 3 | "
        "staleness | trainer wait s | producer idle s |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for workload, sides in results.items():
        for mode, r in sides.items():
            lines.append(
                f"| {workload} | {mode} | {r['tokens_per_s']:.1f} | {r['train_s']:.0f} | "
                f"{r['eval_before']:.2f} -> {r['eval_after']:.2f} | {r['reward_last3']:.2f} | "
                f"{r['staleness_mean']:.2f} | {r['trainer_wait_s']:.0f} | "
                f"{r['producer_idle_s']:.0f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated sides")
    parser.add_argument("--workloads", default="main,long")
    parser.add_argument("--steps", type=int, default=10, help="training steps per side")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per side")
    parser.add_argument("--json", action="store_true", help="print raw numbers")
    parser.add_argument(
        "extra", nargs="*", help="key=value overrides for every side (e.g. model.path=DIR)"
    )
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        root = Path(args.root)
        figures = run_side(
            args.side, args.workloads, args.steps, args.threads, root / args.side, args.extra
        )
        Path(args.out).write_text(json.dumps(figures))
        return
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_async_") as tmp:
        for workload in args.workloads.split(","):
            results[workload] = {}
            for mode in args.modes.split(","):
                root = Path(tmp) / workload
                root.mkdir(exist_ok=True)
                results[workload][mode] = _side_in_subprocess(
                    mode, workload, args.steps, args.threads, root, args.extra
                )
                print(f"{workload}/{mode}: {results[workload][mode]}", file=sys.stderr)
    print(json.dumps(results, indent=2) if args.json else _table(results))


if __name__ == "__main__":
    main()
