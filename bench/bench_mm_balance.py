"""Step time of a mixed text + image batch on 2 data-parallel ranks: prompts dealt by cost
(``rollout.balance_ranks``) against contiguous slices.

Run: ``OMP_NUM_THREADS=1 python bench/bench_mm_balance.py`` (well under a minute on 2 idle
cores; minutes when the machine is shared). Prints a markdown table; ``--json PATH`` writes
the raw figures; ``--steps`` / ``--repeats`` set how many steps each figure is the median of.

Two worker processes join a gloo group on CPU (the launcher's variables, then
``init_process_group_from_env``, as the project's 2-rank tests do), one thread each. Every
step both ranks take the step's prompts from the run's schedule (16 prompts of a shuffled
epoch, 8 a rank): contiguously (:func:`~lightrft.application.data_schedule.prompt_indices`)
or balanced by cost (:func:`~lightrft.application.data_schedule.balanced_prompt_indices`
with :func:`~lightrft.domain.prompt_cost.prompt_cost` at encoder weight ``w``: 0, the
model's vision-tower / language-model parameter ratio, and 1, the default). A rank then does
a GRPO step's model work on its prompts: one sample of 16 fixed response tokens each
(decoding is left out: it costs every prompt the same), a no-grad log-prob forward (old
log-probs), a forward and backward (vision tower frozen, as by default), and an all-reduce
of the gradients (what data parallelism waits on).

Columns: ``cost imbalance`` (max / mean rank cost - 1 under the cost model, mean over the
steps); ``cost-model bound`` (median over the steps of (1 + this imbalance) / (1 +
contiguous's) - 1: the change of the step time if compute followed the cost model exactly);
``rank CPU max/min`` (the ranks' CPU seconds before the all-reduce); ``compute step``
(the larger of the two ranks' CPU seconds: the step time when every rank has a core of its
own, independent of other load); ``wall step`` (the slowest rank's wall time, all-reduce
included: what this machine gave, load and all); ``paired vs contiguous``: the median over
the steps of the ratio to contiguous on the same step's prompts. Medians over ``steps x repeats`` steps
after one warm-up step a repeat; the modes are interleaved step by step, so a change of
machine load hits every mode alike.

The model is a random tiny Qwen2-VL built from a config (text: 2 layers of 128; vision
tower: 2 layers of 64); the data are 64 prompts, half with one random square image of
168-336 pixels (36-144 merged positions, 144-576 patches) and a few words, in a random order.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORLD = 2
PER_RANK = 8
PROMPTS = 64
SAMPLES = 1
RESPONSE = 16
SEED = 0


def _model() -> Any:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    from tests.helpers.tiny_multimodal import EOS, PAD, VOCAB, _vl_ids

    text = {
        "vocab_size": VOCAB,
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "intermediate_size": 256,
        "max_position_embeddings": 2048,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 1e4,
            "mrope_section": [8, 12, 12],
        },
        "pad_token_id": PAD,
        "eos_token_id": EOS,
        "bos_token_id": None,
    }
    vision = {
        "depth": 2,
        "embed_dim": 64,
        "hidden_size": 128,
        "num_heads": 2,
        "mlp_ratio": 2,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    torch.manual_seed(SEED)
    config = Qwen2VLConfig(text_config=text, vision_config=vision, **_vl_ids())
    return Qwen2VLForConditionalGeneration(config)


def _prompts() -> list[Any]:
    """The encoded prompts: half with one image, sizes and texts drawn from ``SEED``."""
    import random

    from transformers import Qwen2VLImageProcessorPil

    from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
    from lightrft.domain.types import PromptRecord
    from tests.helpers.tiny_multimodal import noise_image, tiny_mm_tokenizer

    rng = random.Random(SEED)
    tok = tiny_mm_tokenizer()
    processor = Qwen2VLImageProcessorPil(min_pixels=168 * 168, max_pixels=336 * 336)
    encoder = VisionLanguageEncoder(tok, processor)
    records = []
    for i in range(PROMPTS):
        text = " ".join(
            rng.choice(["what", "is", "the", "shape", "colour", "here"])
            for _ in range(rng.randint(3, 8))
        )
        with_image = i % 2 == 0
        parts = [{"type": "image"}] if with_image else []
        rendered = tok.apply_chat_template(
            [{"role": "user", "content": [*parts, {"type": "text", "text": text}]}],
            tokenize=False,
            add_generation_prompt=True,
        )
        ids = tuple(tok(rendered, add_special_tokens=False).input_ids)
        media = {}
        if with_image:
            side = rng.choice([168, 224, 280, 336])
            media = {"images": [noise_image(side, side, i)]}
        records.append(encoder.encode(PromptRecord(f"p{i}", rendered, ids, multimodal=media)))
    order = list(range(PROMPTS))
    rng.shuffle(order)
    return [records[i] for i in order]


def _indices(mode: str, step: int, rank: int, prompts: list[Any]) -> tuple[list[int], float]:
    """This rank's prompt indices at ``step`` under ``mode`` and the cost imbalance."""
    from lightrft.application.data_schedule import balanced_prompt_indices, prompt_indices
    from lightrft.domain.balanced_assignment import contiguous_loads, imbalance
    from lightrft.domain.prompt_cost import prompt_cost

    schedule = {
        "per_rank": PER_RANK,
        "world_size": WORLD,
        "num_prompts": len(prompts),
        "seed": SEED,
    }
    weight = 1.0 if mode == "contiguous" else float(mode.split("w=")[1])

    def cost(i: int) -> int:
        return prompt_cost(len(prompts[i].prompt_token_ids), prompts[i].multimodal, weight)

    if mode == "contiguous":
        everyone = [prompt_indices(step, rank=r, **schedule) for r in range(WORLD)]
        loads = contiguous_loads([cost(i) for part in everyone for i in part], WORLD)
        return everyone[rank], imbalance(loads)
    chosen, metrics = balanced_prompt_indices(step, rank=rank, cost=cost, **schedule)
    return chosen, metrics["balance/imbalance_after"]


def _step(policy: Any, prompts: list[Any], indices: list[int]) -> tuple[float, float]:
    """One step's model work on this rank's prompts: (CPU seconds of this rank's work before
    the all-reduce, wall seconds of the whole step)."""
    import torch.distributed as dist

    from lightrft.application.batching import build_rollout_tensors
    from lightrft.domain.types import Completion

    mine = [prompts[i] for i in indices]
    gen = torch.Generator().manual_seed(1)
    completions = [
        Completion(
            p, tuple(torch.randint(20, 200, (RESPONSE,), generator=gen).tolist()), "", "length"
        )
        for p in range(len(mine))
        for _ in range(SAMPLES)
    ]
    dist.barrier()
    start, cpu = time.perf_counter(), time.process_time()
    batch = build_rollout_tensors(mine, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy.forward(batch)  # old log-probs
    policy.forward(batch).logprobs.sum().backward()
    busy = time.process_time() - cpu
    grads = [p.grad for p in policy.module.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    for p in policy.module.parameters():
        p.grad = None
    return busy, time.perf_counter() - start


def _log(rank: int, message: str) -> None:
    if rank == 0:
        print(f"[rank 0] {message}", file=sys.stderr, flush=True)


def run_rank(rank: int, port: int, steps: int, repeats: int, out: str) -> None:
    """Entry of a worker process (the launcher's variables, then the group)."""
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
    )  # fmt: skip
    torch.set_num_threads(1)
    import torch.distributed as dist

    from lightrft.adapters.accelerators import CpuAccelerator
    from lightrft.adapters.distributed import init_process_group_from_env
    from lightrft.adapters.hf import HfPolicy
    from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
    from lightrft.adapters.hf.vision_language import freeze_vision_tower

    init_process_group_from_env(CpuAccelerator())
    _log(rank, "joined the group")
    model = _model()
    weight = _encoder_weight(model)
    modes = ["contiguous", "balanced w=0.0", f"balanced w={weight}", "balanced w=1.0"]
    freeze_vision_tower(model)
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    prompts = _prompts()
    _log(rank, f"{len(prompts)} prompts encoded")
    record: dict[str, dict[str, list[float]]] = {
        m: {"step": [], "cpu": [], "cpu_ratio": [], "imbalance": []} for m in modes
    }
    for repeat in range(repeats):
        for step in range(steps + 1):  # step 0 of every repeat is a warm-up
            for mode in modes:
                indices, cost_imbalance = _indices(mode, repeat * steps + step, rank, prompts)
                busy, took = _step(policy, prompts, indices)
                times = torch.tensor([took, busy, -busy], dtype=torch.float64)
                dist.all_reduce(times, op=dist.ReduceOp.MAX)  # slowest step, max / min CPU
                _log(rank, f"repeat {repeat} step {step} {mode}: {float(times[0]):.3f} s")
                if step:
                    record[mode]["step"].append(float(times[0]))
                    record[mode]["cpu"].append(float(times[1]))
                    record[mode]["cpu_ratio"].append(float(times[1] / -times[2]))
                    record[mode]["imbalance"].append(cost_imbalance)
    if rank == 0:
        Path(out).write_text(json.dumps({"encoder_weight": weight, "modes": record}))
    dist.destroy_process_group()


def _table(record: dict[str, dict[str, list[float]]]) -> str:
    base = record["contiguous"]

    def paired(mode: str, key: str) -> float:
        """Median over the steps of this mode's figure / contiguous's on the same prompts."""
        pairs = zip(record[mode][key], base[key], strict=True)
        return 100 * (statistics.median(a / b for a, b in pairs) - 1)

    lines = [
        "| assignment | cost imbalance | cost-model bound | rank CPU max/min | compute step s "
        "| paired vs contiguous | wall step s | paired vs contiguous |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, r in record.items():
        bound = statistics.median(
            (1 + a) / (1 + b) for a, b in zip(r["imbalance"], base["imbalance"], strict=True)
        )
        lines.append(
            f"| {mode} | {statistics.mean(r['imbalance']):.3f} | {100 * (bound - 1):+.1f}% "
            f"| {statistics.median(r['cpu_ratio']):.2f} | {statistics.median(r['cpu']):.3f} "
            f"| {paired(mode, 'cpu'):+.1f}% | {statistics.median(r['step']):.3f} "
            f"| {paired(mode, 'step'):+.1f}% |"
        )
    return "\n".join(lines)


def _encoder_weight(model: Any) -> float:
    """Vision tower parameters / language-model parameters of the bench model."""
    tower = sum(p.numel() for n, p in model.named_parameters() if ".visual." in f".{n}")
    return round(tower / (sum(p.numel() for p in model.parameters()) - tower), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="measured steps a repeat")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from lightrft.adapters.distributed import free_port

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "record.json")
        ctx = multiprocessing.get_context("spawn")
        port = free_port()
        procs = [
            ctx.Process(target=run_rank, args=(r, port, args.steps, args.repeats, out))
            for r in range(WORLD)
        ]
        start = time.perf_counter()
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=600)
        codes = [proc.exitcode for proc in procs]
        if codes != [0, 0]:
            raise SystemExit(f"worker exit codes {codes}")
        result = json.loads(Path(out).read_text())
    took = time.perf_counter() - start
    print(f"2 gloo ranks on CPU, 1 thread each; {args.steps} steps x {args.repeats} repeats a mode")
    weight = result["encoder_weight"]
    print(f"w = encoder weight (vision tower / language-model parameters of this model: {weight})")
    print(_table(result["modes"]))
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; {took:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
