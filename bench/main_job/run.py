"""The main CPU job: GRPO on SmolLM2-135M-Instruct with the built-in arithmetic task.

Wires ColocatedRLCycle with the real HF adapters, evaluates held-out greedy accuracy before
and after, trains until --steps or --train-budget-s, and prints per-step phase times.

    .venv/bin/python bench/main_job/run.py --steps 20 --lr 2e-5
    .venv/bin/python bench/main_job/run.py --eval-only --difficulty 2 --instruction "..."
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
import torch

T0 = time.perf_counter()

from lightrft.adapters.accelerators.cpu import CpuAccelerator  # noqa: E402
from lightrft.adapters.datasets import PromptFormat, arithmetic_prompts  # noqa: E402
from lightrft.adapters.hf import (  # noqa: E402
    HfPolicy,
    HfReferenceModel,
    HfRolloutEngine,
    LoraParams,
    ModelLoadParams,
    default_model_path,
    load_causal_lm,
    load_tokenizer,
)
from lightrft.adapters.rewards import MathAnswerReward  # noqa: E402
from lightrft.adapters.single_device import SingleDeviceStrategy  # noqa: E402
from lightrft.application.cycle import ColocatedRLCycle, CycleComponents, CycleSettings  # noqa: E402
from lightrft.application.params import (  # noqa: E402
    AlgorithmParams,
    CycleParams,
    RewardShapingParams,
    RolloutParams,
    TrainParams,
)
from lightrft.domain.types import OptimizerParams, SamplingParams  # noqa: E402

CPU = torch.device("cpu")
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
INSTRUCTIONS = {
    "hash": 'Give the final answer after "####".',
    "number": "Answer with just the number.",
    "none": "",
    "think": 'Think step by step, then give the final answer after "####".',
}
PHASES = ("weight_sync", "rollout", "reward", "reference", "train", "eval", "eval_reward")


class PrintTracker:
    """Tracker port: prints a one-line summary per step, keeps everything."""

    def __init__(self, verbose_samples: int) -> None:
        self.rows: list[tuple[int, dict[str, float]]] = []
        self.samples: list[tuple[int, list[dict[str, Any]]]] = []
        self.verbose_samples = verbose_samples

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        m = {k: float(v) for k, v in metrics.items()}
        self.rows.append((step, m))
        if "time/step_s" in m:
            times = " ".join(
                f"{p}={m[f'time/{p}_s']:.1f}" for p in PHASES[:5] if f"time/{p}_s" in m
            )
            print(
                f"step {step:3d} {m['time/step_s']:6.1f}s [{times}] "
                f"reward={m.get('reward/mean', 0):.3f} std={m.get('reward/std', 0):.3f} "
                f"len={m.get('response_length/mean', 0):.1f} "
                f"trunc={m.get('response_length/truncated_fraction', 0):.2f} "
                f"gnorm={m.get('train/grad_norm', 0):.3f} clip={m.get('train/clip_fraction', m.get('train/clipfrac', 0)):.3f} "
                f"ent={m.get('train/entropy', 0):.3f} kl={m.get('kl/mean', 0):.4f} "
                f"wall={time.perf_counter() - T0:.0f}s",
                flush=True,
            )

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        self.samples.append((step, [dict(r) for r in rows]))
        for r in list(rows)[: self.verbose_samples]:
            print(f"    r={r['reward']:.0f} a={r['advantage']:+.2f} {r['response']!r}")

    def close(self) -> None:
        pass


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--difficulty", type=int, default=2)
    p.add_argument("--eval-difficulty", type=int, default=None)
    p.add_argument("--instruction", default="hash", help=f"{list(INSTRUCTIONS)} or literal text")
    p.add_argument("--system-prompt", default=None)
    p.add_argument("--train-prompts", type=int, default=2000)
    p.add_argument("--eval-prompts", type=int, default=100)
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--train-budget-s", type=float, default=None, help="stop training after")
    p.add_argument("--prompts-per-step", type=int, default=8)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--eval-max-new-tokens", type=int, default=None)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--lora-rank", type=int, default=0, help="0: full fine-tune")
    p.add_argument("--lora-alpha", type=float, default=None)
    p.add_argument("--kl", type=float, default=0.0)
    p.add_argument("--policy-loss", default="ppo")
    p.add_argument("--estimator", default="grpo")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--mini-batch", type=int, default=None)
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--fwd-micro-batch", type=int, default=16)
    p.add_argument("--packing", action="store_true")
    p.add_argument("--dynamic-sampling", action="store_true")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--eval-only", action="store_true")
    p.add_argument("--eval-every", type=int, default=0, help="0: only before/after")
    p.add_argument("--show-samples", type=int, default=2)
    p.add_argument("--show-eval", type=int, default=0, help="print this many eval responses")
    p.add_argument("--json-out", default=None)
    return p.parse_args()


def build(args: argparse.Namespace) -> tuple[ColocatedRLCycle, PrintTracker, Any, Any]:
    torch.manual_seed(args.seed)
    path = default_model_path()
    tok = load_tokenizer(path)
    load = ModelLoadParams(dtype=args.dtype)
    instruction = INSTRUCTIONS.get(args.instruction, args.instruction)
    fmt = PromptFormat(system_prompt=args.system_prompt) if args.system_prompt else None
    train = arithmetic_prompts(
        args.train_prompts,
        args.data_seed,
        args.difficulty,
        tokenizer=tok,
        prompt_format=fmt,
        instruction=instruction,
    )
    eval_diff = args.eval_difficulty or args.difficulty
    heldout = arithmetic_prompts(
        args.eval_prompts,
        10_000 + args.data_seed,
        eval_diff,
        tokenizer=tok,
        prompt_format=fmt,
        instruction=instruction,
    )
    lora = None
    if args.lora_rank:
        lora = LoraParams(rank=args.lora_rank, alpha=args.lora_alpha or 2.0 * args.lora_rank)
    engine = HfRolloutEngine(load_causal_lm(path, CPU, load), tok, CPU, sleep_mode="offload")
    policy_model = load_causal_lm(path, CPU, load)
    policy = HfPolicy(policy_model, lora=lora, packing=args.packing, tokenizer=tok)
    reference = None
    if args.kl > 0:
        reference = HfReferenceModel(load_causal_lm(path, CPU, load), CPU, packing=args.packing)
    strategy = SingleDeviceStrategy(
        CPU,
        OptimizerParams(
            lr=args.lr,
            max_grad_norm=args.max_grad_norm,
            warmup_steps=args.warmup,
            weight_decay=0.0,
        ),
    )
    strategy.prepare(policy.module)
    tracker = PrintTracker(args.show_samples)
    components = CycleComponents(
        prompts=train,
        engine=engine,
        policy=policy,
        policy_strategy=strategy,
        reward_sources=[MathAnswerReward(name="math")],
        collective=strategy,
        tracker=tracker,
        reference=reference,
        accelerator=CpuAccelerator(),
        eval_prompts=heldout,
    )
    settings = CycleSettings(
        rollout=RolloutParams(
            prompts_per_step=args.prompts_per_step,
            sampling=SamplingParams(
                n=args.n,
                temperature=args.temperature,
                top_p=args.top_p,
                max_new_tokens=args.max_new_tokens,
            ),
            dynamic_sampling=args.dynamic_sampling,
            pad_token_id=int(tok.pad_token_id),
            forward_micro_batch_size=args.fwd_micro_batch,
        ),
        algorithm=AlgorithmParams(
            advantage_estimator=args.estimator, policy_loss=args.policy_loss, kl_coef=args.kl
        ),
        shaping=RewardShapingParams(),
        train=TrainParams(
            epochs=args.epochs,
            mini_batch_size=args.mini_batch,
            micro_batch_size=args.micro_batch,
            seed=args.seed,
        ),
        cycle=CycleParams(
            total_steps=max(args.steps, 1),
            seed=args.seed,
            eval_every=None,
            eval_sampling=SamplingParams(
                n=1,
                temperature=0.0,
                max_new_tokens=args.eval_max_new_tokens or args.max_new_tokens,
            ),
            log_samples_per_step=args.show_samples,
        ),
    )
    return ColocatedRLCycle(components, settings), tracker, heldout, tok


def evaluate(cycle: ColocatedRLCycle, label: str, show: int) -> dict[str, float]:
    t = time.perf_counter()
    m = cycle.evaluate()
    cycle.phases.take_metrics()
    dt = time.perf_counter() - t
    print(
        f"EVAL {label}: accuracy={m['eval/accuracy']:.3f} parse_fail="
        f"{m.get('eval/reward/math/parse_failure_rate', float('nan')):.3f} len={m['eval/response_length']:.1f}"
        f" ({dt:.1f}s)",
        flush=True,
    )
    if show:
        c = cycle.components
        prompts = [c.eval_prompts[i] for i in range(show)]  # type: ignore[index]
        outs = c.engine.generate(prompts, cycle.settings.cycle.eval_sampling)
        for p, o in zip(prompts, outs, strict=True):
            print(f"   ref={p.reference} -> {o.text!r}")
    return {**m, "eval_s": dt}


def main() -> None:
    args = parse()
    torch.set_num_threads(args.threads)
    cycle, tracker, _, _ = build(args)
    if args.eval_only:
        cycle.engine_version = cycle.policy_version  # the engine already has the weights
    print(f"built in {time.perf_counter() - T0:.1f}s; args={vars(args)}", flush=True)
    before = evaluate(cycle, "before", args.show_eval)
    result: dict[str, Any] = {"args": vars(args), "before": before}
    if not args.eval_only:
        t_train = time.perf_counter()
        curve = [(0, before["eval/accuracy"])]
        while cycle.state.step < args.steps:
            if args.train_budget_s and time.perf_counter() - t_train > args.train_budget_s:
                break
            cycle.run(resume=False, max_steps=1)
            if (
                args.eval_every
                and cycle.state.step % args.eval_every == 0
                and (cycle.state.step < args.steps)
            ):
                curve.append(
                    (
                        cycle.state.step,
                        evaluate(cycle, f"step {cycle.state.step}", 0)["eval/accuracy"],
                    )
                )
        train_s = time.perf_counter() - t_train
        after = evaluate(cycle, "after", args.show_eval)
        curve.append((cycle.state.step, after["eval/accuracy"]))
        steps = [m for _, m in tracker.rows if "time/step_s" in m]
        mean = {
            k: sum(m.get(k, 0.0) for m in steps) / max(len(steps), 1)
            for k in ["time/step_s"]
            + [f"time/{p}_s" for p in PHASES[:5]]
            + ["reward/mean", "response_length/mean", "throughput/generated_tokens_per_s"]
        }
        result.update(
            after=after,
            steps=len(steps),
            train_s=train_s,
            mean_step=mean,
            curve=curve,
            reward_curve=[m.get("reward/mean", 0.0) for m in steps],
        )
        print(
            f"RESULT before={before['eval/accuracy']:.3f} after={after['eval/accuracy']:.3f} "
            f"delta={after['eval/accuracy'] - before['eval/accuracy']:+.3f} steps={len(steps)} "
            f"train_s={train_s:.0f} total_wall={time.perf_counter() - T0:.0f}s",
            flush=True,
        )
        print("MEAN STEP " + " ".join(f"{k}={v:.2f}" for k, v in mean.items()))
        print("CURVE", curve)
    result["total_wall_s"] = time.perf_counter() - T0
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
