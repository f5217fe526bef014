"""GRPO step time, tokens/s and peak memory: LightRFT vs TRL's ``GRPOTrainer``, on CPU (or a
CUDA GPU with ``--device cuda``).

Run: ``.venv/bin/python bench/bench_vs_trl.py`` (needs ``pip install 'lightrft[bench]'``;
about 5 minutes on 2 cores; ``--rounds 2`` repeats both sides in alternating order). Prints a
markdown table; ``--json PATH`` also writes the raw numbers. ``--workload main-job`` (the
default) is the prompts of ``lightrft demo`` with its sizes until 2026-11-27 (8 x 8); ``--workload small-group`` is 4
prompts x G=4 with 48 new tokens, where fewer samples share each prompt.
``--fixed-length`` makes both sides ignore EOS and generate exactly ``--max-new-tokens``
tokens per row, so the work per step is identical whatever the samples. ``--device cuda``
runs both sides on the first GPU (``--dtype bf16``: ours ``model.dtype=bf16``, bf16 compute
with fp32 master weights; TRL ``bf16=True``, autocast over fp32 weights) and adds each side's
peak GPU memory (``torch.cuda.max_memory_allocated``).

The workload, the same on both sides (each side runs in its own fresh subprocess, so the
peak RSS of one does not include the other; see ``--help`` for the sizes):

- model: the embedded SmolLM2-135M-Instruct (the safetensors directory of
  ``lightrft.adapters.hf.default_model_path()``), float32, SDPA attention, no gradient
  checkpointing, ``torch.set_num_threads(--threads)`` (and ``OMP_NUM_THREADS``);
- prompts: ``--prompts`` built-in arithmetic prompts (main-job: with the demo's
  instruction and system prompt) rendered with the chat template, the
  same token ids on both sides (checked); every step uses all of them (one epoch per step);
- sampling: ``--group`` samples per prompt, temperature ``--temperature``, top-p 1, no
  top-k, at most ``--max-new-tokens`` tokens, stop at EOS (HF ``generate`` decodes every
  row until all have stopped and drops tokens after EOS; our engine drops finished rows);
- reward: LightRFT's ``MathAnswerReward`` on both sides (TRL calls it as a reward function);
- loss: GRPO advantages (group mean/std), PPO-clip eps 0.2, token-mean aggregation over
  the whole step's tokens (TRL ``loss_type="dapo"``), no KL (beta 0, no reference model),
  one optimizer step per generated batch (TRL ``num_iterations=1``, ``steps_per_generation``
  = gradient accumulation steps; ours ``epochs=1``, no mini-batch split), processed in
  micro-batches of ``--micro-batch`` samples; AdamW lr ``--lr``, constant schedule, no
  weight decay, grad-norm clip 1.0.

What each side computes per step (no old-log-prob pass on either side: with one update per
batch the old policy is the current one, and both use the detached current log-probs):

- TRL: ``model.generate`` (KV cache; the trained model itself), reward, advantages, then for
  each micro-batch one forward through TRL's fused LM head (log-probs + entropy; on CPU it
  projects *every* position of the sequence, prompt included, through the LM head) and a
  backward; then the optimizer step.
- LightRFT (its defaults for one CPU device): the rollout engine runs the policy's own module
  (``rollout.engine.share_policy_weights=auto``: no second copy of the weights, and the weight sync
  copies nothing); our KV-cached sampling loop prefills each distinct prompt once and drops
  finished rows; reward, advantages; then per micro-batch (rows of one prompt kept together)
  one forward that runs each distinct prompt once (``model.prefix_sharing=auto``: one packed
  row ``[prompt, response_1..response_k]`` with a 4-D mask) and puts only the response
  positions through the LM head (log-probs + entropy with the chunked kernel), a backward;
  then the optimizer step. Phase switches (sleep/wake) are no-ops on CPU.

Timing: ``--warmup`` steps, then ``--steps`` timed steps. Step time = wall time of one whole
RL step (TRL: between consecutive ``on_step_end`` callbacks; ours: ``cycle.train_step()``).
Generation time: TRL ``_generate_single_turn`` (wrapped), ours the ``rollout`` phase.
Generated tokens = completion tokens up to and including EOS. "gen tok/s" = generated tokens
/ generation time; "step tok/s" = generated tokens / step time. Peak RSS = ``VmHWM`` of the
worker process at the end (includes model loading); "setup RSS" = ``VmRSS`` after
everything is built, before the first step. The machine may be shared: rerun if noisy.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_PATCHES = "no_entropy"

_DEMO_INSTRUCTION = "Answer with just the number."
_DEMO_SYSTEM = "Reply with only the final number."
WORKLOADS: dict[str, dict[str, Any]] = {
    # `lightrft demo`'s shape until 2026-11-27 (the demo now samples 16 prompts x 4 at T=0.6);
    # kept so that the figures in docs/performance.md stay comparable
    "main-job": {
        "prompts": 8,
        "group": 8,
        "max_new_tokens": 16,
        "temperature": 0.8,
        "micro_batch": 16,
        "lr": 5e-5,
        "instruction": _DEMO_INSTRUCTION,
        "system_prompt": _DEMO_SYSTEM,
    },
    "small-group": {
        "prompts": 4,
        "group": 4,
        "max_new_tokens": 48,
        "temperature": 1.0,
        "micro_batch": 4,
        "lr": 1e-6,
        "instruction": None,
        "system_prompt": None,
    },
}


# --------------------------------------------------------------------------- helpers
def _proc_status_mb(field: str) -> float:
    """``VmHWM`` / ``VmRSS`` of this process in MB (from /proc/self/status)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _peak_gpu_mb() -> float:
    """Peak memory allocated by torch on the GPU in MB (0 when CUDA was not used)."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return 0.0
    return torch.cuda.max_memory_allocated() / 2**20


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def _config_overrides(a: argparse.Namespace, run_dir: str) -> dict[str, Any]:
    return {
        "data.train.num_builtin": a.prompts,
        **({"data.train.instruction": a.instruction} if a.instruction else {}),
        **({"data.train.system_prompt": a.system_prompt} if a.system_prompt else {}),
        "data.train.difficulty": a.difficulty,
        "data.train.seed": a.seed,
        "data.eval": None,
        "rollout.prompts_per_step": a.prompts,
        "rollout.n_samples_per_prompt": a.group,
        "rollout.max_new_tokens": a.max_new_tokens,
        "rollout.temperature": a.temperature,
        "rollout.top_p": 1.0,
        "rollout.top_k": 0,
        "train.micro_batch_size": a.micro_batch,
        "train.epochs": 1,
        "train.total_steps": a.warmup + a.steps,
        "optim.lr": a.lr,
        "optim.weight_decay": 0.0,
        "optim.max_grad_norm": 1.0,
        "optim.schedule": "constant",
        "algorithm.kl_coef": 0.0,
        "algorithm.clip_eps_low": 0.2,
        "algorithm.clip_eps_high": 0.2,
        "algorithm.agg": "token-mean",
        **({"model.path": a.model} if a.model else {}),
        "model.dtype": a.dtype,
        "model.attn_implementation": "sdpa",
        "model.gradient_checkpointing": False,
        "backend.accelerator": a.device,
        "logging.run_dir": run_dir,
        "logging.log_samples_per_step": 0,
        "logging.progress": False,
        "eval.every": None,
        "checkpoint.every": None,
    }


def _load_config(a: argparse.Namespace, run_dir: str) -> Any:
    from lightrft.entrypoints.config import load_config
    from lightrft.entrypoints.config.loading import parse_value

    overrides = _config_overrides(a, run_dir)
    for item in a.set or []:
        key, _, value = item.partition("=")
        overrides[key] = parse_value(value)
    return load_config(algorithm="grpo", overrides=overrides)


def _quiet_logs() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.getLogger("transformers").setLevel(logging.ERROR)


def scratch_dir(prefix: str) -> str:
    """A fresh temporary directory, removed when this process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# --------------------------------------------------------------------------- our side
def run_ours(a: argparse.Namespace) -> dict[str, Any]:
    """Times ``RLCycle.train_step`` built by the container from the config."""
    import torch

    from lightrft.entrypoints.api import build_container

    _set_threads(a.threads)
    _quiet_logs()
    run_dir = scratch_dir("bench_vs_trl_ours_")
    container = build_container(_load_config(a, run_dir))
    cycle = container.cycle()
    if a.worker == "proto" and a.patch:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import grpo_patches

        grpo_patches.apply(a.patch.split(","), container)
    if a.fixed_length:  # never stop at EOS: every row decodes max_new_tokens tokens
        engine = container.engine()
        engine._stop_token_ids = lambda sampling: [-1]  # type: ignore[method-assign]
    prompts = container.prompts()
    prompt_ids = [list(prompts[i].prompt_token_ids) for i in range(len(prompts))]
    setup_rss = _proc_status_mb("VmRSS")
    steps: list[dict[str, float]] = []
    for i in range(a.warmup + a.steps):
        torch.manual_seed(a.seed + i)
        started, cpu_started = time.perf_counter(), time.process_time()
        m = cycle.train_step()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        gen_tokens = m["response_length/mean"] * m["rollout/samples"]
        steps.append(
            {
                "step_s": elapsed,
                "cpu_s": cpu,
                "gen_s": m.get("time/rollout_s", 0.0),
                "reward_s": m.get("time/reward_s", 0.0),
                "prep_s": m.get("time/reference_s", 0.0),
                "train_s": m.get("time/train_s", 0.0),
                "sync_s": m.get("time/weight_sync_s", 0.0),
                "gen_tokens": gen_tokens,
                "max_len": m["response_length/max"],
                "reward": m["reward/mean"],
            }
        )
        _print_step(a.worker, i, a.warmup, steps[-1])
    config = container.config()
    passes = (
        "generate (own KV loop; engine shares the policy's weights: "
        f"{container.engine().shares_policy_weights}), reward, fwd+bwd per micro-batch "
        f"(prefix sharing {config.model.prefix_sharing}), AdamW"
    )
    if a.worker == "proto":
        passes += f"; patched: {a.patch}"
    return {
        "threads": [torch.get_num_threads()],
        "side": a.worker,
        "steps": steps,
        "setup_rss_mb": setup_rss,
        "peak_rss_mb": _proc_status_mb("VmHWM"),
        "peak_gpu_mb": _peak_gpu_mb(),
        "prompt_ids": prompt_ids,
        "passes": passes,
    }


# --------------------------------------------------------------------------- TRL side
def run_trl(a: argparse.Namespace) -> dict[str, Any]:
    """Times ``GRPOTrainer.train`` on the same model, prompts, reward and loss."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from lightrft.adapters.hf import default_model_path
    from lightrft.adapters.rewards import MathAnswerReward
    from lightrft.domain.types import Completion, PromptRecord, RewardSample
    from lightrft.entrypoints.wiring import data

    _set_threads(a.threads)
    _quiet_logs()
    path = a.model or default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    cfg = _load_config(a, scratch_dir("bench_vs_trl_cfg_"))
    source = data.build_prompts(cfg.data.train, tokenizer)
    records: list[PromptRecord] = [source[i] for i in range(len(source))]
    trl_ids = tokenizer(text=[r.prompt_text for r in records])["input_ids"]
    prompt_ids = [list(r.prompt_token_ids) for r in records]
    if [list(x) for x in trl_ids] != prompt_ids:
        raise SystemExit("TRL would tokenize the rendered prompts differently from LightRFT")
    by_text = {r.prompt_text: r for r in records}
    dataset = Dataset.from_list([{"prompt": r.prompt_text} for r in records])

    reward_source = MathAnswerReward()
    counts: list[dict[str, float]] = []
    timers: dict[str, float] = {"gen_s": 0.0, "score_s": 0.0, "reward_s": 0.0, "train_fb_s": 0.0}

    def math_reward(
        prompts: list[str], completions: list[str], completion_ids: list[list[int]], **_: Any
    ) -> list[float]:
        t0 = time.perf_counter()
        samples = [
            RewardSample(by_text[p], Completion(0, tuple(ids), text, "stop", (0.0,) * len(ids)))
            for p, text, ids in zip(prompts, completions, completion_ids, strict=True)
        ]
        scores = reward_source.score(samples).scores.tolist()
        lengths = [len(ids) for ids in completion_ids]
        counts.append(
            {
                "gen_tokens": float(sum(lengths)),
                "max_len": float(max(lengths)),
                "reward": sum(scores) / len(scores),
            }
        )
        timers["reward_s"] += time.perf_counter() - t0
        return scores

    total = a.prompts * a.group
    if total % a.micro_batch:
        raise SystemExit("--micro-batch must divide --prompts x --group")
    gen_kwargs = {"min_new_tokens": a.max_new_tokens} if a.fixed_length else None
    args = GRPOConfig(
        output_dir=scratch_dir("bench_vs_trl_trl_"),
        use_cpu=a.device == "cpu",
        bf16=a.dtype == "bf16",
        fp16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=a.micro_batch,
        gradient_accumulation_steps=total // a.micro_batch,
        num_generations=a.group,
        max_completion_length=a.max_new_tokens,
        temperature=a.temperature,
        top_p=1.0,
        top_k=0,
        generation_kwargs=gen_kwargs,
        beta=0.0,
        num_iterations=1,
        epsilon=0.2,
        loss_type="dapo",
        scale_rewards="group",
        learning_rate=a.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        max_steps=a.warmup + a.steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=a.seed,
        shuffle_dataset=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
        log_completions=False,
    )
    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="sdpa"
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=math_reward,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    _wrap_timer(trainer, "_generate_single_turn", timers, "gen_s")
    _wrap_timer(trainer, "_generate_and_score_completions", timers, "score_s")
    _wrap_timer(trainer, "training_step", timers, "train_fb_s")

    marks: list[float] = []
    threads_seen: set[int] = set()
    cpu_marks: list[float] = []
    snapshots: list[dict[str, float]] = []

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, *args: Any, **kwargs: Any) -> None:
            marks.append(time.perf_counter())
            cpu_marks.append(time.process_time())

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            threads_seen.add(torch.get_num_threads())
            marks.append(time.perf_counter())
            cpu_marks.append(time.process_time())
            snapshots.append(dict(timers))
            for key in timers:
                timers[key] = 0.0

    trainer.add_callback(Clock())
    setup_rss = _proc_status_mb("VmRSS")
    profile_to = os.environ.get("BENCH_CPROFILE")  # cProfile the whole train() into this file
    if profile_to:
        import cProfile

        cProfile.runctx("trainer.train()", globals(), {"trainer": trainer}, profile_to)
    else:
        trainer.train()
    steps = []
    for i, (snap, count) in enumerate(zip(snapshots, counts, strict=True)):
        step_s = marks[i + 1] - marks[i]
        steps.append(
            {
                "step_s": step_s,
                "cpu_s": cpu_marks[i + 1] - cpu_marks[i],
                "gen_s": snap["gen_s"],
                "reward_s": snap["reward_s"],
                "prep_s": snap["score_s"] - snap["gen_s"] - snap["reward_s"],
                # training_step includes _prepare_inputs (generation, reward, advantages)
                "train_s": step_s - snap["score_s"],
                "sync_s": 0.0,
                **count,
            }
        )
        _print_step("trl", i, a.warmup, steps[-1])
    return {
        "side": "trl",
        "steps": steps,
        "setup_rss_mb": setup_rss,
        "peak_rss_mb": _proc_status_mb("VmHWM"),
        "peak_gpu_mb": _peak_gpu_mb(),
        "prompt_ids": prompt_ids,
        "threads": sorted(threads_seen),
        "passes": "generate (HF generate), reward, fwd(fused head, all positions)+bwd per "
        "micro-batch, AdamW",
    }


def _wrap_timer(obj: Any, name: str, timers: dict[str, float], key: str) -> None:
    original: Callable[..., Any] = getattr(obj, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            timers[key] += time.perf_counter() - t0

    setattr(obj, name, timed)


def _print_step(side: str, i: int, warmup: int, s: dict[str, float]) -> None:
    tag = "warmup" if i < warmup else "timed"
    print(
        f"[{side}] step {i} ({tag}): {s['step_s']:.2f}s cpu {s['cpu_s']:.2f}s "
        f"gen {s['gen_s']:.2f}s "
        f"train {s['train_s']:.2f}s tokens {s['gen_tokens']:.0f} max_len {s['max_len']:.0f} "
        f"reward {s['reward']:.2f}",
        file=sys.stderr,
        flush=True,
    )


# --------------------------------------------------------------------------- driver
def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _summary(runs: Sequence[dict[str, Any]], warmup: int) -> dict[str, float]:
    """Medians over the timed steps of every run (round) of one side; peak RSS: the max."""
    timed = [s for r in runs for s in r["steps"][warmup:]]

    def med(key: str) -> float:
        return _median([s[key] for s in timed])

    return {
        "step_s": med("step_s"),
        "min_step_s": min(s["step_s"] for s in timed),
        "cpu_s": med("cpu_s"),
        "cores": _median([s["cpu_s"] / s["step_s"] for s in timed]),
        "gen_s": med("gen_s"),
        "train_s": med("train_s"),
        "other_s": _median([s["step_s"] - s["gen_s"] - s["train_s"] for s in timed]),
        "gen_tokens": med("gen_tokens"),
        "max_len": med("max_len"),
        "step_tok_s": _median([s["gen_tokens"] / s["step_s"] for s in timed]),
        "gen_tok_s": _median([s["gen_tokens"] / max(s["gen_s"], 1e-9) for s in timed]),
        "setup_rss_mb": max(r["setup_rss_mb"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "peak_gpu_mb": max(r.get("peak_gpu_mb", 0.0) for r in runs),
        "load": _median([r["load"] for r in runs]),
        "timed_steps": float(len(timed)),
    }


ROWS = [
    ("step time, median (s)", "step_s", "{:.2f}"),
    ("step time, best (s)", "min_step_s", "{:.2f}"),
    ("step CPU time, all threads, median (s)", "cpu_s", "{:.2f}"),
    ("  generation (s)", "gen_s", "{:.2f}"),
    ("  train fwd+bwd+optim (s)", "train_s", "{:.2f}"),
    ("  other: sync, reward, advantages (s)", "other_s", "{:.2f}"),
    ("generated tokens / step", "gen_tokens", "{:.0f}"),
    ("longest completion (tokens)", "max_len", "{:.1f}"),
    ("step tokens/s (generated / step time)", "step_tok_s", "{:.1f}"),
    ("generation tokens/s", "gen_tok_s", "{:.1f}"),
    ("setup RSS (MB)", "setup_rss_mb", "{:.0f}"),
    ("peak RSS (MB)", "peak_rss_mb", "{:.0f}"),
    ("peak GPU memory allocated (MB)", "peak_gpu_mb", "{:.0f}"),
    ("CPU time / wall time (cores obtained)", "cores", "{:.2f}"),
    ("machine load average during the run", "load", "{:.2f}"),
]


NAMES = {"ours": "LightRFT", "proto": "LightRFT + prototypes", "trl": "TRL"}


def table(summaries: dict[str, dict[str, float]]) -> str:
    """Markdown: one column per side, then each non-TRL side divided by TRL."""
    sides = [s for s in ("ours", "proto", "trl") if s in summaries]
    ratios = [s for s in sides if s != "trl"] if "trl" in summaries else []
    head = [NAMES[s] for s in sides] + [f"{NAMES[s]} / TRL" for s in ratios]
    lines = ["| metric | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for label, key, fmt in ROWS:
        if key == "peak_gpu_mb" and not any(summaries[s][key] for s in sides):
            continue  # a CPU run
        cells = [fmt.format(summaries[s][key]) for s in sides]
        trl = summaries["trl"][key] if ratios else 0.0
        cells += [f"{summaries[s][key] / trl:.2f}" if trl else "nan" for s in ratios]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _spawn(side: str, argv: Sequence[str], threads: int, wait_policy: str) -> dict[str, Any]:
    env = dict(
        os.environ,
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    if wait_policy:  # spinning OpenMP workers collapse when another process shares the cores
        env["OMP_WAIT_POLICY"] = wait_policy
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        target = out.name
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--worker", side, "--out", target]
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    subprocess.run(cmd, env=env, check=True)
    result: dict[str, Any] = json.loads(Path(target).read_text())
    # 1-minute load averages at start and end (this worker itself adds about --threads)
    result["load"] = (load_before + os.getloadavg()[0]) / 2
    os.unlink(target)
    print(f"[{side}] worker finished in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    return result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--workload",
        choices=sorted(WORKLOADS),
        default="main-job",
        help="size preset; the flags below override single values. main-job: the demo's "
        "prompts and its earlier sizes (8 prompts x G=8, 16 new tokens, micro-batch 16, T=0.8, "
        "lr 5e-5, 'Answer with just the number.'); small-group: 4 prompts x G=4, 48 new "
        "tokens, micro-batch 4, T=1, lr 1e-6, the dataset's default instruction",
    )
    p.add_argument("--prompts", type=int, help="prompts per step")
    p.add_argument("--group", type=int, help="samples per prompt (G)")
    p.add_argument("--max-new-tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--micro-batch", type=int, help="samples per forward/backward")
    p.add_argument("--lr", type=float)
    p.add_argument(
        "--model",
        default=None,
        help="HF model directory for both sides (default: the embedded SmolLM2-135M-Instruct)",
    )
    p.add_argument("--difficulty", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="both sides")
    p.add_argument(
        "--dtype",
        choices=["fp32", "bf16"],
        default="fp32",
        help="bf16: ours model.dtype=bf16 (fp32 master weights), TRL bf16=True (autocast)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run each side this many times, alternating the order; medians over all",
    )
    p.add_argument(
        "--omp-wait-policy",
        default="PASSIVE",
        help="OMP_WAIT_POLICY of both workers ('' keeps the environment's); PASSIVE "
        "avoids a 4-15x slowdown of 2-thread torch when another process shares the cores",
    )
    p.add_argument(
        "--fixed-length",
        action="store_true",
        help="ignore EOS: every row generates exactly --max-new-tokens tokens",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="extra LightRFT config override (ours only; e.g. model.packing=true)",
    )
    p.add_argument(
        "--patch",
        default=DEFAULT_PATCHES,
        help="bench-only prototypes applied on side 'proto', comma-separated (see grpo_patches.py)",
    )
    p.add_argument(
        "--sides",
        default="ours,trl",
        help="comma-separated: ours, trl, proto (ours with --patch applied)",
    )
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--worker", choices=["ours", "proto", "trl"], help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    for key, value in WORKLOADS[a.workload].items():
        if getattr(a, key, None) is None:
            setattr(a, key, value)
    return a


def main(argv: Sequence[str] | None = None) -> None:
    a = parse_args(argv)
    if a.worker is not None:
        result = run_trl(a) if a.worker == "trl" else run_ours(a)
        Path(a.out).write_text(json.dumps(result))
        return
    passthrough = [x for x in (argv if argv is not None else sys.argv[1:])]
    sides = a.sides.split(",")
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    failed: dict[str, str] = {}
    for k in range(a.rounds):  # alternate the order (AB BA ...) so drifting load hits both
        for side in sides if k % 2 == 0 else sides[::-1]:
            if side in failed:
                continue
            try:
                runs[side].append(_spawn(side, passthrough, a.threads, a.omp_wait_policy))
            except subprocess.CalledProcessError as error:  # the other sides still report
                failed[side] = f"exit status {error.returncode} (its stderr is above)"
    for side, why in failed.items():
        print(f"side {side} failed: {why}; the table shows the other sides")
        runs.pop(side)
    if not runs:
        raise SystemExit("every side failed")
    results = {side: r[0] for side, r in runs.items()}
    summaries = {side: _summary(r, a.warmup) for side, r in runs.items()}
    print(
        f"\nGRPO on {a.model or 'SmolLM2-135M-Instruct'} ({a.dtype}, {a.device.upper()}, "
        f"{a.threads} threads), workload "
        f"{a.workload}: {a.prompts} prompts x "
        f"G={a.group}, max {a.max_new_tokens} new tokens"
        f"{' (EOS ignored: fixed length)' if a.fixed_length else ''}, micro-batch {a.micro_batch}, "
        f"{a.warmup} warm-up + {a.steps} timed steps\n"
    )
    ids = {side: r["prompt_ids"] for side, r in results.items()}
    if any(v != next(iter(ids.values())) for v in ids.values()):
        print("WARNING: the sides saw different prompt token ids")
    print(table(summaries))
    steps = ", ".join(f"{summaries[s]['timed_steps']:.0f} ({NAMES[s]})" for s in summaries)
    print(
        f"\nMedians over {steps} timed steps; peak RSS is the max over {a.rounds} round(s). "
        f"The load average includes the benchmark itself (about {a.threads}); more than that "
        f"means other processes competed for the cores."
    )
    for side in summaries:
        print(f"- {NAMES[side]}: {results[side]['passes']}")
    if a.json:
        Path(a.json).write_text(
            json.dumps({"args": vars(a), "results": runs, "summaries": summaries}, indent=1)
        )


if __name__ == "__main__":
    main()
