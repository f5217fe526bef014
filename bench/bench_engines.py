"""HF engine vs vLLM on the embedded model: generated tokens/s, weight-sync seconds, peak RSS
and engine start seconds, both sides in one run, one markdown table.

Run (needs vLLM: ``LIGHTRFT_EXTRAS=dev,deepspeed,vllm bash scripts/setup.sh``):
``.venv/bin/python bench/bench_engines.py`` (several minutes on 2 cores). Each engine runs
in a fresh subprocess (peak RSS is per process: ``VmHWM``), fp32, on the embedded
SmolLM2-135M-Instruct, with the same prompt token ids and sampling seeds. Workloads:
``main`` is the main job's rollout (8 prompts x 8 samples x <= 16 tokens), ``long`` a
long-generation one (4 prompts x 4 samples x <= 128 tokens). The weight sync loads the
policy's own weights (an HfPolicy on the same checkpoint) into the engine, as the training
cycle does each step. Sides: ``hf`` (the HF engine on ``transformers``' decode steps:
``rollout.engine.fused_decode=off``, the default before 2026-11-27), ``hf-packed`` (the same
with ``rollout.engine.packed_linears``), ``hf-fused`` (the fused decode steps: the default HF
engine on CPU) and ``vllm``; ``--engines hf`` runs one side; ``--json`` prints raw numbers. ``--fixed-length``
samples with ``ignore_eos``: every completion runs to the workload's token limit, so both
engines generate the same number of tokens per step (with EOS, the engines draw different
samples from the same seed, and the one whose samples stop earlier decodes fewer rows per
step, which lowers its tokens/s without a slower step).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKLOADS = {"main": (8, 8, 16), "long": (4, 4, 128)}  # prompts, samples, max new tokens


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _hf_engine(model_dir: Path, packed: bool = False, fused: bool = False):  # noqa: ANN202
    import torch

    from lightrft.adapters.hf import (
        HfRolloutEngine,
        ModelLoadParams,
        load_causal_lm,
        load_tokenizer,
    )

    model = load_causal_lm(model_dir, torch.device("cpu"), ModelLoadParams(dtype="float32"))
    tokenizer = load_tokenizer(model_dir)
    return HfRolloutEngine(
        model,
        tokenizer,
        torch.device("cpu"),
        packed_linears=packed,
        fused_decode="on" if fused else "off",
    )


def _vllm_engine(model_dir: Path):  # noqa: ANN202
    from lightrft.adapters.vllm import VllmEngineParams, VllmRolloutEngine

    params = VllmEngineParams(str(model_dir), dtype="float32", enforce_eager=True, kv_cache_gib=1.0)
    return VllmRolloutEngine(params, "cpu")


ENGINES = {
    "hf": lambda d: _hf_engine(d, packed=False),  # rollout.engine.fused_decode=off
    "hf-packed": lambda d: _hf_engine(d, packed=True),  # + rollout.engine.packed_linears=true
    "hf-fused": lambda d: _hf_engine(d, fused=True),  # the default on CPU (fused_decode=auto)
    "vllm": _vllm_engine,
}


def run_side(name: str, fixed_length: bool = False) -> dict[str, float]:
    """Measures one engine in this process."""
    import torch

    from lightrft.adapters.datasets import arithmetic_prompts
    from lightrft.adapters.hf import HfPolicy, ModelLoadParams, load_causal_lm, load_tokenizer
    from lightrft.adapters.hf.default_model import default_model_path
    from lightrft.domain.types import SamplingParams

    torch.set_num_threads(2)
    model_dir = default_model_path()
    start = time.perf_counter()
    engine = ENGINES[name](model_dir)
    result = {"start_s": time.perf_counter() - start}
    source = arithmetic_prompts(64, seed=10_000, tokenizer=load_tokenizer(model_dir))
    for label, (prompts, n, tokens) in WORKLOADS.items():
        batch = [source[i] for i in range(prompts)]
        sampling = SamplingParams(
            n=n, max_new_tokens=tokens, temperature=1.0, seed=0, ignore_eos=fixed_length
        )
        engine.generate(batch[:1], SamplingParams(n=1, max_new_tokens=2, seed=0))  # warm-up
        start = time.perf_counter()
        completions = engine.generate(batch, sampling)
        elapsed = time.perf_counter() - start
        generated = sum(len(c.token_ids) for c in completions)
        result[f"{label}_s"] = elapsed
        result[f"{label}_tokens_per_s"] = generated / elapsed
        result[f"{label}_tokens"] = generated
    policy = HfPolicy(
        load_causal_lm(model_dir, torch.device("cpu"), ModelLoadParams(dtype="float32"))
    )
    state = ((n, p.detach()) for n, p in policy.module.named_parameters())
    start = time.perf_counter()
    engine.load_weights(policy.weights_for_sync(state))
    result["sync_s"] = time.perf_counter() - start
    result["peak_rss_mb"] = _peak_rss_mb()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="hf,hf-packed,hf-fused,vllm")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every side this many times, alternating the order; the table shows medians",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--fixed-length", action="store_true", help="ignore EOS (see above)")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(run_side(args.side, args.fixed_length)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "2", "PYTHONPATH": str(Path(__file__).parent.parent)}
    names = args.engines.split(",")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for k in range(args.rounds):  # AB BA ...: a drifting load hits every side alike
        for name in names if k % 2 == 0 else names[::-1]:
            side = [sys.executable, __file__, "--side", name]
            done = subprocess.run(
                side + ["--fixed-length"] * args.fixed_length,
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    rows = {
        name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
        for name, rs in runs.items()
    }
    if args.json:
        print(json.dumps({"medians": rows, "runs": runs}, indent=2))
        return
    print("| engine | start s | main: tokens/s | long: tokens/s | weight sync s | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['start_s']:.1f} | {r['main_tokens_per_s']:.0f} "
            f"| {r['long_tokens_per_s']:.0f} | {r['sync_s']:.2f} | {r['peak_rss_mb']:.0f} |"
        )


if __name__ == "__main__":
    main()
