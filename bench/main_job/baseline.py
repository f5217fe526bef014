"""Greedy held-out accuracy of the untrained model for several task variants (one model load)."""

import sys
import time

import torch

torch.set_num_threads(2)
from lightrft.adapters.datasets import PromptFormat, arithmetic_prompts
from lightrft.adapters.hf import HfRolloutEngine, default_model_path, load_causal_lm, load_tokenizer
from lightrft.adapters.rewards import MathAnswerReward
from lightrft.application.evaluator import Evaluator
from lightrft.domain.types import SamplingParams

sys.path.insert(0, "bench/main_job")
from run import INSTRUCTIONS

path = default_model_path()
tok = load_tokenizer(path)
eng = HfRolloutEngine(load_causal_lm(path, torch.device("cpu")), tok, torch.device("cpu"))
ev = Evaluator(eng, [MathAnswerReward(name="math")])
N = int(sys.argv[1])
for spec in sys.argv[2:]:
    d, instr, mnt, *sysp = spec.split(":")
    fmt = PromptFormat(system_prompt=sysp[0]) if sysp else None
    src = arithmetic_prompts(
        N,
        10_000,
        int(d),
        tokenizer=tok,
        instruction=INSTRUCTIONS.get(instr, instr),
        prompt_format=fmt,
    )
    s = SamplingParams(n=1, temperature=0.0, max_new_tokens=int(mnt))
    t = time.perf_counter()
    c = time.process_time()
    m = ev.evaluate(src, s)
    outs = eng.generate([src[i] for i in range(4)], s)
    print(
        f"d={d} instr={instr} mnt={mnt} sys={sysp} prompt_len={len(src[0].prompt_token_ids)} acc={m['eval/accuracy']:.2f} len={m['eval/response_length']:.1f} parse_fail={m['eval/reward/math/parse_failure_rate']:.2f} wall={time.perf_counter() - t:.0f}s cpu={time.process_time() - c:.0f}s",
        flush=True,
    )
    for i, o in enumerate(outs):
        print(f"    ref={src[i].reference} {o.text!r}")
