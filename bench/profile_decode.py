"""Where a decode step's time goes: one KV-cached token for N rows of the embedded model.

Run: ``OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 .venv/bin/python bench/profile_decode.py``
(``--rows 16 --prompt 96 --steps 10``). Prefills N random prompts, then times ``--steps``
one-token steps the way the HF engine runs them (a view of a preallocated attention mask,
explicit positions, logits of the last position only; ``--cache preallocated``, the engine's,
or ``dynamic``, transformers' ``DynamicCache``) and prints the aten ops by self CPU time
over five more steps, with the bytes of weights each step reads. ``--quantization int8``
swaps every linear layer for the engine's weight-only int8 one; ``--dtype bfloat16`` loads
the model in bf16.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import AutoModelForCausalLM, DynamicCache

from lightrft.adapters.hf import default_model_path
from lightrft.adapters.hf.preallocated_cache import preallocated_cache
from lightrft.adapters.hf.quantized_rollout import quantize_linears


class Decoder:
    """N rows after a prefill of ``prompt`` tokens; :meth:`step` decodes one token each."""

    def __init__(self, model: torch.nn.Module, rows: int, prompt: int, cache: str) -> None:
        self.model, self.rows, self.position = model, rows, prompt
        capacity = prompt + 64
        config = model.config  # type: ignore[attr-defined]
        self.cache = (
            DynamicCache(config=config)
            if cache == "dynamic"
            else preallocated_cache(config, capacity)
        )
        ids = torch.randint(10, 1000, (rows, prompt))
        self.mask = torch.ones(rows, capacity, dtype=torch.long)
        out = model(input_ids=ids, attention_mask=self.mask[:, :prompt], past_key_values=self.cache)
        self.token = out.logits[:, -1].argmax(-1, keepdim=True)

    def step(self) -> None:
        positions = torch.full((self.rows, 1), self.position)
        out = self.model(
            input_ids=self.token,
            attention_mask=self.mask[:, : self.position + 1],
            position_ids=positions,
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.token = out.logits[:, -1].argmax(-1, keepdim=True)
        self.position += 1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=16)
    p.add_argument("--prompt", type=int, default=96)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cache", choices=("preallocated", "dynamic"), default="preallocated")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--quantization", choices=("none", "int8"), default="none")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = AutoModelForCausalLM.from_pretrained(
        default_model_path(), dtype=getattr(torch, a.dtype), attn_implementation="sdpa"
    ).eval()
    if a.quantization == "int8":
        quantize_linears(model)
    weights = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    if a.steps + 8 > 64:
        raise SystemExit("--steps: at most 56 (the cache holds 64 new positions)")
    with torch.no_grad():
        decoder = Decoder(model, a.rows, a.prompt, a.cache)
        for _ in range(3):
            decoder.step()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            decoder.step()
        wall, cpu = (time.perf_counter() - wall) / a.steps, (time.process_time() - cpu) / a.steps
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(5):
                decoder.step()
    print(
        f"decode step ({a.cache} cache, {a.dtype}, quantization {a.quantization}), "
        f"{a.rows} rows after {a.prompt} prompt tokens: wall {wall * 1e3:.0f} ms, "
        f"CPU {cpu * 1e3:.0f} ms; weights held {weights / 1e6:.0f} MB"
    )
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    print(f"{'aten op':48s} {'ms/step':>8s} {'share':>6s} {'calls/step':>10s}")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:10]:
        share = 100 * e.self_cpu_time_total / total
        ms = e.self_cpu_time_total / 5 / 1e3
        print(f"{e.key:48s} {ms:8.1f} {share:5.1f}% {e.count / 5:10.0f}")


if __name__ == "__main__":
    main()
