"""Generation cost split for the recommended config: prefill vs decode vs per-token overhead,
and what prefilling each unique prompt once (n-fold KV reuse) would save."""

import time

import torch

torch.set_num_threads(2)
from transformers import DynamicCache

import lightrft.adapters.hf.rollout as R
from lightrft.adapters.datasets import PromptFormat, arithmetic_prompts
from lightrft.adapters.hf import HfRolloutEngine, default_model_path, load_causal_lm, load_tokenizer
from lightrft.domain.types import SamplingParams

CPU = torch.device("cpu")
path = default_model_path()
tok = load_tokenizer(path)
src = arithmetic_prompts(
    8,
    0,
    1,
    tokenizer=tok,
    instruction="Answer with just the number.",
    prompt_format=PromptFormat(system_prompt="Reply with only the final number."),
)
prompts = [src[i] for i in range(8)]
eng = HfRolloutEngine(load_causal_lm(path, CPU), tok, CPU)
s = SamplingParams(n=8, temperature=0.8, max_new_tokens=16, seed=0)
eng.generate(prompts, s)  # warm-up
orig = R.HfRolloutEngine._step
calls = []


def timed(self, ids, *a, **k):
    w = time.perf_counter()
    out = orig(self, ids, *a, **k)
    calls.append((ids.shape[1], time.perf_counter() - w))
    return out


R.HfRolloutEngine._step = timed
for rep in range(2):
    calls.clear()
    w = time.perf_counter()
    c = time.process_time()
    eng.generate(prompts, s)
    total = time.perf_counter() - w
    cpu = time.process_time() - c
    pre = sum(t for l, t in calls if l > 1)
    dec = sum(t for l, t in calls if l == 1)
    print(
        f"generate 8x8 rows, 16 tokens: wall {total:.2f}s (cpu {cpu:.2f}s) prefill {pre:.2f}s decode {dec:.2f}s ({len(calls) - 1} steps) outside-model {total - pre - dec:.2f}s"
    )
R.HfRolloutEngine._step = orig
# prefill only the 8 unique prompts, then expand the cache 8x
ids, mask = eng._left_pad([p.prompt_token_ids for p in prompts])
pos = (mask.cumsum(-1) - 1).clamp(min=0)
m = eng.module
with torch.no_grad():
    for rep in range(2):
        w = time.perf_counter()
        cache = DynamicCache(config=m.config)
        m(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        cache.batch_repeat_interleave(8)
        print(
            f"dedup prefill (8 unique rows + repeat_interleave x8): {time.perf_counter() - w:.2f}s"
        )
