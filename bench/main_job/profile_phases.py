"""Splits a real step's costs: generation (model vs per-token overhead), train fwd/bwd (full vs
LoRA, micro-batch size, packing), AdamW step, weight sync. Wall and CPU seconds."""

import time

import torch

torch.set_num_threads(2)
from lightrft.adapters.datasets import arithmetic_prompts
from lightrft.adapters.hf import (
    HfPolicy,
    HfRolloutEngine,
    LoraParams,
    default_model_path,
    load_causal_lm,
    load_tokenizer,
)
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import OptimizerParams, SamplingParams

CPU = torch.device("cpu")
path = default_model_path()
tok = load_tokenizer(path)


class T:
    def __init__(s, label):
        s.label = label

    def __enter__(s):
        s.w = time.perf_counter()
        s.c = time.process_time()
        return s

    def __exit__(s, *a):
        s.wall = time.perf_counter() - s.w
        s.cpu = time.process_time() - s.c
        print(f"{s.label:55s} wall {s.wall:6.2f}s cpu {s.cpu:6.2f}s", flush=True)


prompts = arithmetic_prompts(
    4, 0, 2, tokenizer=tok, instruction='Give the final answer after "####".'
)
prompts = [prompts[i] for i in range(4)]
engine = HfRolloutEngine(load_causal_lm(path, CPU), tok, CPU)
s = SamplingParams(n=8, temperature=0.8, max_new_tokens=32, seed=0)
with T("generate 4x8 rows, 32 new tokens") as g:
    comps = engine.generate(prompts, s)
ntok = sum(len(c.token_ids) for c in comps)
# model-only cost of the same decode: time engine._step calls
import lightrft.adapters.hf.rollout as R

orig = R.HfRolloutEngine._step
acc = [0.0, 0.0, 0]


def timed(self, *a, **k):
    w = time.perf_counter()
    c = time.process_time()
    out = orig(self, *a, **k)
    acc[0] += time.perf_counter() - w
    acc[1] += time.process_time() - c
    acc[2] += 1
    return out


R.HfRolloutEngine._step = timed
with T("generate again (instrumented)") as g2:
    engine.generate(prompts, s)
print(
    f"   model forward calls {acc[2]}: wall {acc[0]:.2f}s cpu {acc[1]:.2f}s -> overhead outside model {g2.wall - acc[0]:.2f}s wall; {ntok} tokens generated"
)
R.HfRolloutEngine._step = orig
tensors = build_rollout_tensors(prompts, comps, int(tok.pad_token_id))
seq = tensors.sequences
print("batch", tuple(seq.input_ids.shape), "attended tokens", int(seq.attention_mask.sum()))
for lora in (None, LoraParams(rank=16, alpha=32.0)):
    pol = HfPolicy(load_causal_lm(path, CPU), lora=lora)
    st = SingleDeviceStrategy(CPU, OptimizerParams(lr=1e-5))
    st.prepare(pol.module)
    name = "LoRA r16" if lora else "full"
    with T(f"[{name}] no-grad logprob fwd, 32 rows (fwd mb 16)"):
        with torch.no_grad():
            for rows in torch.split(torch.arange(32), 16):
                pol.forward(seq.select(rows))
    for mb in (8,) if lora else (4, 8, 16):
        with T(f"[{name}] fwd+bwd (entropy) 32 rows, micro {mb}"):
            for rows in torch.split(torch.arange(32), mb):
                out = pol.forward(seq.select(rows), with_entropy=True)
                (out.logprobs.sum() * 1e-3 + out.entropy.sum() * 0).backward()
        with T(f"[{name}] AdamW step"):
            st.step()
    with T(f"[{name}] weight sync (merge+copy)"):
        engine.load_weights(pol.weights_for_sync(st.full_state()))
    if lora is None:
        pk = HfPolicy(pol.module, packing=True)
        with T(f"[{name}] fwd+bwd 32 rows micro 8, packing"):
            for rows in torch.split(torch.arange(32), 8):
                out = pk.forward(seq.select(rows), with_entropy=True)
                out.logprobs.sum().mul(1e-3).backward()
        st.step()
    del pol, st
