"""How a GRPO step's time and peak memory grow with response length and group size:
LightRFT (token-budget batching off and on) next to TRL's ``GRPOTrainer``.

Run: ``python bench/bench_scaling.py --quick`` (2 cores: about 10 minutes) or
``python bench/bench_scaling.py`` (the full sweep; hours on 2 cores, minutes on a GPU with
``--shape qwen2.5-0.5b --device-threads``). Needs ``pip install 'lightrft[bench]'`` (TRL).
Prints a markdown table; ``--plot PATH`` writes a PNG, ``--json PATH`` the raw numbers.

Each point is one :mod:`bench_vs_trl` run per side in a fresh subprocess (same prompts,
reward, loss, optimizer; see that module), with ``--fixed-length``: every sample decodes
exactly the given number of tokens, so the work per step is set by the sweep, not by what
the random model happens to sample. The model is random-weight (timings do not need trained
weights): the embedded SmolLM2's architecture and tokenizer with the dimensions of
``--shape``, written once to a temporary directory.

Points: every length of ``lengths`` at the base group size, and every group size of
``groups`` at the base length. Sides:

- ``trl``: ``GRPOTrainer``, micro-batches of one group (G samples);
- ``ours``: LightRFT, the same micro-batches;
- ``ours+budget``: LightRFT with ``train.max_tokens_per_micro_batch`` and
  ``rollout.max_tokens_per_forward`` = ``--token-budget`` instead of a sample count.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_trl as bv  # noqa: E402

PRESETS: dict[str, dict[str, Any]] = {
    "quick": {
        "lengths": (64, 256),
        "groups": (4, 8),
        "base_group": 4,
        "base_length": 64,
        "prompts": 2,
        "warmup": 1,
        "steps": 1,
        "shape": "tiny",
    },
    "full": {
        "lengths": (64, 256, 1024, 2048),
        "groups": (4, 8, 16, 32),
        "base_group": 8,
        "base_length": 256,
        "prompts": 2,
        "warmup": 1,
        "steps": 2,
        "shape": "tiny",
    },
}
SHAPES: dict[str, dict[str, int]] = {
    "tiny": {
        "hidden_size": 128,
        "intermediate_size": 384,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    },
    "smollm2-135m": {},  # the embedded model's own dimensions
    "qwen2.5-0.5b": {
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
    },
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
SIDES = ("trl", "ours", "ours+budget")


def random_model(shape: str, seed: int = 0) -> Path:
    """A random-weight copy of the embedded model's architecture with ``SHAPES[shape]``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from lightrft.adapters.hf import default_model_path

    source = default_model_path()
    config = AutoConfig.from_pretrained(source)
    for key, value in SHAPES[shape].items():
        setattr(config, key, value)
    config.head_dim = config.hidden_size // config.num_attention_heads
    config.max_position_embeddings = max(config.max_position_embeddings, 4096)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    target = Path(tempfile.mkdtemp(prefix=f"bench_scaling_{shape}_"))
    atexit.register(shutil.rmtree, target, ignore_errors=True)  # the workers are done by then
    model.save_pretrained(target)
    for name in TOKENIZER_FILES:
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    params = sum(p.numel() for p in model.parameters())
    print(f"random {shape} model: {params / 1e6:.1f}M parameters in {target}", file=sys.stderr)
    return target


def points(a: argparse.Namespace) -> list[tuple[int, int]]:
    """(length, group) of every run: lengths at the base group, groups at the base length."""
    pts = [(n, a.base_group) for n in a.lengths] + [(a.base_length, g) for g in a.groups]
    return sorted(set(pts), key=lambda p: (p[1], p[0]))


def worker_argv(
    a: argparse.Namespace, model: Path, length: int, group: int, side: str
) -> list[str]:
    """The ``bench_vs_trl`` arguments of one side at one point."""
    argv = [
        "--workload", "small-group",
        "--prompts", str(a.prompts),
        "--group", str(group),
        "--max-new-tokens", str(length),
        "--micro-batch", str(group),
        "--fixed-length",
        "--model", str(model),
        "--warmup", str(a.warmup),
        "--steps", str(a.steps),
        "--threads", str(a.threads),
    ]  # fmt: skip
    if side == "ours+budget":
        budget = str(a.token_budget)
        argv += [
            "--set", f"train.max_tokens_per_micro_batch={budget}",
            "--set", f"rollout.max_tokens_per_forward={budget}",
        ]  # fmt: skip
    return argv


def run_point(a: argparse.Namespace, model: Path, length: int, group: int) -> dict[str, Any]:
    """Every side at one point: ``{side: bench_vs_trl summary}``."""
    out: dict[str, Any] = {}
    for side in a.sides:
        worker = "trl" if side == "trl" else "ours"
        argv = worker_argv(a, model, length, group, side)
        print(f"== L={length} G={group} {side}", file=sys.stderr, flush=True)
        run = bv._spawn(worker, argv, a.threads, a.omp_wait_policy)
        out[side] = bv._summary([run], a.warmup)
    return out


def table(results: list[dict[str, Any]], sides: Sequence[str]) -> str:
    """Markdown: one row per point; wall time, CPU time (all threads) and peak RSS of every
    side per step, then ours / TRL. On a shared machine the CPU time is the steadier one."""
    head = ["new tokens", "G"]
    head += [f"{s} wall (s)" for s in sides] + [f"{s} CPU (s)" for s in sides]
    head += [f"{s} peak RSS (MB)" for s in sides]
    ratio = "trl" in sides and "ours" in sides
    head += ["ours / TRL wall", "ours / TRL CPU", "ours / TRL RSS"] if ratio else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in results:
        s = r["sides"]
        cells = [str(r["length"]), str(r["group"])]
        for key, fmt in (("step_s", "{:.1f}"), ("cpu_s", "{:.1f}"), ("peak_rss_mb", "{:.0f}")):
            cells += [fmt.format(s[x][key]) for x in sides]
        if ratio:
            cells += [
                f"{s['ours'][k] / s['trl'][k]:.2f}" for k in ("step_s", "cpu_s", "peak_rss_mb")
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], a: argparse.Namespace, path: Path) -> None:
    """2 x 2 PNG: step time and peak RSS against length (base G) and group (base length)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    sweeps = [
        ("new tokens per sample", "length", lambda r: r["group"] == a.base_group),
        ("group size G", "group", lambda r: r["length"] == a.base_length),
    ]
    for col, (label, key, keep) in enumerate(sweeps):
        rows = sorted((r for r in results if keep(r)), key=lambda r: r[key])
        xs = [r[key] for r in rows]
        for side in a.sides:
            axes[0][col].plot(xs, [r["sides"][side]["step_s"] for r in rows], "o-", label=side)
            axes[1][col].plot(xs, [r["sides"][side]["peak_rss_mb"] for r in rows], "o-", label=side)
        for row, metric in enumerate(("step time (s)", "peak RSS (MB)")):
            axes[row][col].set_xscale("log", base=2)
            axes[row][col].set_xlabel(label)
            axes[row][col].set_ylabel(metric)
            axes[row][col].grid(alpha=0.3)
    axes[0][0].legend()
    fig.suptitle(f"GRPO step on CPU ({a.threads} threads), random {a.shape} model")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="the small preset (default: full)")
    p.add_argument("--lengths", type=int, nargs="+", help="new tokens per sample to sweep")
    p.add_argument("--groups", type=int, nargs="+", help="group sizes to sweep")
    p.add_argument("--base-group", type=int, help="G of the length sweep")
    p.add_argument("--base-length", type=int, help="new tokens of the group sweep")
    p.add_argument("--prompts", type=int, help="prompts per step")
    p.add_argument("--warmup", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--shape", choices=sorted(SHAPES))
    p.add_argument("--model", help="use this HF model directory instead of a random one")
    p.add_argument("--token-budget", type=int, default=2048, help="tokens per micro-batch")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--omp-wait-policy", default="PASSIVE")
    p.add_argument(
        "--sides", default=",".join(SIDES), help="comma-separated subset of " + ", ".join(SIDES)
    )
    p.add_argument("--plot", type=Path, help="write the PNG here")
    p.add_argument("--json", type=Path, help="write the raw numbers here")
    p.add_argument(
        "--report", type=Path, help="print the table (and --plot) of an earlier --json; run nothing"
    )
    a = p.parse_args(argv)
    for key, value in PRESETS["quick" if a.quick else "full"].items():
        if getattr(a, key, None) is None:
            setattr(a, key, value)
    a.sides = [s for s in a.sides.split(",") if s]
    unknown = set(a.sides) - set(SIDES)
    if unknown:
        p.error(f"--sides: unknown {sorted(unknown)}; choose from {SIDES}")
    return a


def main(argv: Sequence[str] | None = None) -> None:
    a = parse_args(argv)
    if a.report:
        results = json.loads(a.report.read_text())["results"]
        print(table(results, a.sides))
        if a.plot:
            plot(results, a, a.plot)
        return
    model = Path(a.model) if a.model else random_model(a.shape)
    results = []
    for length, group in points(a):
        results.append(
            {"length": length, "group": group, "sides": run_point(a, model, length, group)}
        )
        print(table(results, a.sides), file=sys.stderr, flush=True)
    print(
        f"\nGRPO step, random {a.shape} model, fp32, CPU {a.threads} threads, {a.prompts} "
        f"prompts x G, fixed-length generation, micro-batch = G (token budget "
        f"{a.token_budget}), {a.warmup} warm-up + {a.steps} timed step(s)\n"
    )
    print(table(results, a.sides))
    if a.plot:
        plot(results, a, a.plot)
    if a.json:
        a.json.write_text(
            json.dumps(
                {"args": {**vars(a), "plot": str(a.plot), "json": str(a.json)}, "results": results},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
