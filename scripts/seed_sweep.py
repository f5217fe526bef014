"""Run one LightRFT job over several seeds and print a table of what it learned.

    python scripts/seed_sweep.py --seeds 0 1 2 3 4                       # `lightrft demo`
    python scripts/seed_sweep.py --job ttrl --seeds 0 1 2
    python scripts/seed_sweep.py --seeds 0 1 -- train.total_steps=12 optim.lr=3e-5
    python scripts/seed_sweep.py --command "lightrft train grpo --config my.yaml" --seeds 0 1
    python scripts/seed_sweep.py --job ttrl --metric eval/reward/math/accuracy --seeds 0 1 2
        -- model.path=main-{seed}-step5_model     (one line; first, per seed S:
        lightrft checkpoints export main-S --step 5 --out main-S-step5_model)

Each seed runs as its own process (``<command> train.seed=S logging.run_dir=<out>/seed-S``
plus the overrides after ``--``, where ``{seed}`` stands for the seed), one after the other, so the figures are what a user who
runs the command sees. Per seed the table shows the first and last held-out value of
``--metric`` (default ``eval/accuracy``), the change, the best and the final training reward
(``--train-metric``, default ``reward/mean``) with the best one's step, and the wall time.
``--out DIR/results.json`` keeps the rows; ``--markdown`` prints the table as Markdown with
the command, the date and the machine's load average, for docs/results.md; ``--mechanism``
adds a second table of how each run trained (lowest entropy, share of groups scoring alike,
response length, the step ``early_entropy_collapse`` fired), to tell an early entropy
collapse from other failures.

Jobs (``--job``): ``demo`` (GRPO main job), ``ttrl`` (test-time RL: the label-free
majority-vote reward on the held-out problems, from the main job's step-5 model), ``rlhf`` (``lightrft demo rlhf``: reward model, then GRPO against it;
its figures come from the run's summary), or any command given with ``--command``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

WINDOW = 3
"""Steps averaged for the smoothed training reward: one step's reward is the mean over a few
prompts (8 in the demo, a standard error of about 0.15), so the best single step is mostly
noise; the mean of 3 steps is what says whether training held its level."""

JOBS: dict[str, list[str]] = {
    "demo": ["lightrft", "demo"],
    "ttrl": ["lightrft", "demo", "ttrl"],
    "rlhf": ["lightrft", "demo", "rlhf"],
}


@dataclass
class SeedRow:
    """What one seed's run learned (None: the run logged no such value)."""

    seed: int
    returncode: int
    seconds: float
    before: float | None = None
    after: float | None = None
    best_train: float | None = None
    best_step: int | None = None
    final_train: float | None = None
    best_smooth: float | None = None  # best mean of WINDOW consecutive steps
    final_smooth: float | None = None  # mean of the last WINDOW steps
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def gain(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


def read_metrics(path: Path) -> list[dict[str, float]]:
    """The rows of a run's ``metrics.jsonl`` (the last row of a step wins, as on resume)."""
    rows: dict[int, dict[str, float]] = {}
    if not path.exists():
        return []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[int(row["step"])] = {**rows.get(int(row["step"]), {}), **row}
    return [rows[step] for step in sorted(rows)]


def summarize(
    seed: int,
    returncode: int,
    seconds: float,
    rows: list[dict[str, float]],
    metric: str,
    train_metric: str,
) -> SeedRow:
    """A :class:`SeedRow` from a run's metric rows: first/last ``metric``, best/final
    ``train_metric``."""
    result = SeedRow(seed, returncode, seconds)
    evals = [row[metric] for row in rows if metric in row]
    if evals:
        result.before = evals[0]
    if len(evals) > 1:
        result.after = evals[-1]
    train = [(int(row["step"]), row[train_metric]) for row in rows if train_metric in row]
    if train:
        result.best_step, result.best_train = max(train, key=lambda item: item[1])
        result.final_train = train[-1][1]
        values = [value for _, value in train]
        means = [sum(values[i : i + WINDOW]) / WINDOW for i in range(len(values) - WINDOW + 1)]
        if means:
            result.best_smooth, result.final_smooth = max(means), means[-1]
    return result


EARLY_COLLAPSE = "health/fired/early_entropy_collapse"
SETTLED_FROM = 4
"""First step of the stretch the mechanism table averages over: at steps 1-3 a seed's samples
may still all run into the token limit (every group scores 0 alike, whatever the policy)."""


ALIKE = "reward/alike_groups_fraction"


def mechanism(rows: list[dict[str, float]]) -> dict[str, float | None]:
    """What a run's training looked like, to tell an early entropy collapse from slow learning:
    the lowest ``train/entropy`` and its step, the mean share of groups scoring alike
    (``reward/alike_groups_fraction``; runs logged before it: ``advantages/zero_groups_fraction``,
    the same for grpo), of the response length and of the training reward
    from step :data:`SETTLED_FROM` on, and the first step ``early_entropy_collapse`` fired."""
    steps = [row for row in rows if int(row["step"]) >= 1]
    entropy = [(row["train/entropy"], int(row["step"])) for row in steps if "train/entropy" in row]
    late = [row for row in steps if int(row["step"]) >= SETTLED_FROM]

    def mean(key: str) -> float | None:
        values = [row[key] for row in late if key in row]
        return sum(values) / len(values) if values else None

    fired = [int(row["step"]) for row in steps if row.get(EARLY_COLLAPSE, 0) > 0]
    return {
        "min_entropy": min(entropy)[0] if entropy else None,
        "min_entropy_step": float(min(entropy)[1]) if entropy else None,
        "alike": mean(ALIKE)
        if any(ALIKE in row for row in late)
        else mean("advantages/zero_groups_fraction"),
        "length": mean("response_length/mean"),
        "reward": mean("reward/mean"),
        "collapse_step": float(fired[0]) if fired else None,
    }


def mechanism_table(seeds: list[int], runs: list[list[dict[str, float]]]) -> list[str]:
    """Markdown lines: :func:`mechanism` per seed."""
    lines = [
        f"| seed | lowest entropy, nats (step) | groups alike, steps {SETTLED_FROM}+ | response "
        f"length, steps {SETTLED_FROM}+ | train reward, steps {SETTLED_FROM}+ | "
        "early_entropy_collapse fired at |",
        "|---|---|---|---|---|---|",
    ]
    for seed, rows in zip(seeds, runs, strict=True):
        m = mechanism(rows)
        step = m["min_entropy_step"]
        low = f"{_fmt(m['min_entropy'])} ({step:.0f})" if step is not None else "-"
        fired = f"step {m['collapse_step']:.0f}" if m["collapse_step"] is not None else "no"
        cells = [str(seed), low, _fmt(m["alike"]), _fmt(m["length"], 1), _fmt(m["reward"]), fired]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def rlhf_extras(run_dir: Path) -> dict[str, float]:
    """The RLHF demo's held-out figures from its ``summary.json`` (flattened numbers)."""
    path = run_dir / "summary.json"
    if not path.exists():
        return {}
    flat: dict[str, float] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}{key}.", inner)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat[prefix.rstrip(".")] = float(value)

    walk("", json.loads(path.read_text()))
    return flat


def run_seed(command: list[str], seed: int, out: Path, overrides: list[str]) -> tuple[int, float]:
    """Runs the job for ``seed`` in ``out/seed-S``; returns (exit code, wall seconds)."""
    run_dir = out / f"seed-{seed}"
    overrides = [o.replace("{seed}", str(seed)) for o in overrides]
    if command[:3] == JOBS["rlhf"]:
        args = [*command[:2], "--run-dir", str(run_dir), *command[2:]]
        args += [f"train.seed={seed}", *overrides]
    else:
        args = [*command, f"train.seed={seed}", f"logging.run_dir={run_dir}"]
        args += ["logging.overwrite=true", "logging.progress=false", *overrides]
    log = out / f"seed-{seed}.log"
    started = time.perf_counter()
    with log.open("w") as sink:
        code = subprocess.run(args, stdout=sink, stderr=subprocess.STDOUT, check=False).returncode
    return code, time.perf_counter() - started


def _fmt(value: float | None, digits: int = 2, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def table(rows: list[SeedRow], metric: str, extra_keys: list[str]) -> list[str]:
    """Markdown table lines, one row per seed."""
    head = [
        "seed",
        f"{metric} before",
        "after",
        "change",
        "best train reward (step)",
        "final train reward",
        f"best / final {WINDOW}-step mean",
        "time (s)",
        *extra_keys,
        "exit",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        best = f"{_fmt(row.best_train)} ({row.best_step})" if row.best_step is not None else "-"
        cells = [
            str(row.seed),
            _fmt(row.before),
            _fmt(row.after),
            _fmt(row.gain, signed=True),
            best,
            _fmt(row.final_train),
            f"{_fmt(row.best_smooth)} / {_fmt(row.final_smooth)}",
            f"{row.seconds:.0f}",
        ]
        cells += [_fmt(row.extra.get(key)) for key in extra_keys]
        cells.append(str(row.returncode))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, overrides = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", choices=sorted(JOBS), default="demo")
    parser.add_argument("--command", help="a lightrft command line instead of --job")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("runs/seed_sweep"))
    parser.add_argument("--metric", default="eval/accuracy")
    parser.add_argument("--train-metric", default="reward/mean")
    parser.add_argument("--extra", nargs="*", default=[], help="summary keys to show (rlhf)")
    parser.add_argument("--markdown", action="store_true", help="print command, date, load")
    parser.add_argument(
        "--mechanism",
        action="store_true",
        help="also print entropy, groups alike, length and the early-collapse step per seed",
    )
    args = parser.parse_args(argv)
    command = shlex.split(args.command) if args.command else list(JOBS[args.job])
    args.out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    rows: list[SeedRow] = []
    runs: list[list[dict[str, float]]] = []
    for seed in args.seeds:
        code, seconds = run_seed(command, seed, args.out, overrides)
        run_dir = args.out / f"seed-{seed}"
        metrics_dir = run_dir / "grpo" if (run_dir / "grpo").is_dir() else run_dir
        runs.append(read_metrics(metrics_dir / "metrics.jsonl"))
        row = summarize(seed, code, seconds, runs[-1], args.metric, args.train_metric)
        row.extra = rlhf_extras(run_dir) if command[:3] == JOBS["rlhf"] else {}
        rows.append(row)
        print(table([row], args.metric, args.extra)[-1], flush=True)
    load_after = os.getloadavg()[0]
    (args.out / "results.json").write_text(json.dumps([asdict(r) for r in rows], indent=2))
    shown = " ".join([*command, "train.seed=S", *overrides])
    if args.markdown:
        date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        print(
            f"\n`{shown}`, {date}, load average {load_before:.1f} -> {load_after:.1f} "
            f"on {os.cpu_count()} cores\n"
        )
    print("\n".join(table(rows, args.metric, args.extra)))
    if args.mechanism:
        print("\n" + "\n".join(mechanism_table(args.seeds, runs)))
    gains = [row.gain for row in rows if row.gain is not None]
    if gains:
        print(
            f"\nchange of {args.metric}: min {min(gains):+.2f}, mean "
            f"{sum(gains) / len(gains):+.2f} over {len(gains)} seeds"
        )
    return 0 if all(row.returncode == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
