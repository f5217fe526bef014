"""Peak memory and time of per-token log-probs + entropy: naive vs chunked, on CPU.

Run: ``.venv/bin/python bench/bench_logprobs.py`` (about a minute on 2 cores); prints a
markdown table. ``--cases 8x1024x49152:bf16,8x1024x49152:fp32`` picks other shapes (these
big ones take minutes; naive needs about 8 GB on top of the logits),
``--chunk-size`` the rows per chunk, ``--no-entropy`` measures the log-probs alone.

What is measured: one forward + backward of ``sum(g1 * logprobs) + sum(g2 * entropy)``
with random upstream gradients ``g1, g2``, starting from existing (B, T, V) logits.
"naive" is ``torch.log_softmax(logits.float() / temperature, -1)`` + gather + ``-(p *
log p).sum(-1)``; "chunked" is ``lightrft.domain.token_logprobs.token_logprobs``.

How peak memory is measured (torch has no allocator statistics on CPU), two ways, both
on top of the inputs and both including the logits' gradient (B*T*V in the logits'
dtype, which every method must produce):

- peak alloc MB: a ``TorchDispatchMode`` sees every op's outputs, adds the bytes of each
  new storage and subtracts them when the storage is freed (``weakref.finalize``); the
  peak of that running sum is what a GPU caching allocator would have to hold.
- peak RSS MB: each case runs in a fresh subprocess with ``MALLOC_MMAP_THRESHOLD_=65536``
  (glibc serves large buffers with mmap and unmaps them on free, so freed memory is not
  reused invisibly). After a tiny warm-up pass it writes ``5`` to ``/proc/self/clear_refs``
  (resets the kernel's peak-RSS mark ``VmHWM``), reads ``VmRSS`` as the baseline, runs the
  measured pass and reads ``VmHWM``. This counts touched pages, so a buffer filled chunk
  by chunk (the chunked gradient) counts only as far as it has been written; it can be
  lower than the alloc peak. NaN when ``/proc/self/clear_refs`` is not writable.

Time is the best of ``--repeats`` passes (default 1, after the warm-up), in milliseconds;
on a shared machine it is noisy. Ratios in parentheses are relative to naive.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import weakref
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from lightrft.domain.token_logprobs import token_logprobs

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
DEFAULT_CASES = "4x512x32000:bf16,4x512x32000:fp32"
TEMPERATURE = 0.9
MB = 1024 * 1024


def naive(logits: Tensor, labels: Tensor, with_entropy: bool, chunk_size: int) -> list[Tensor]:
    log_p = torch.log_softmax(logits.float() / TEMPERATURE, dim=-1)
    outputs = [log_p.gather(-1, labels[..., None]).squeeze(-1)]
    if with_entropy:
        outputs.append(-(log_p.exp() * log_p).sum(-1))
    return outputs


def chunked(logits: Tensor, labels: Tensor, with_entropy: bool, chunk_size: int) -> list[Tensor]:
    out = token_logprobs(
        logits, labels, temperature=TEMPERATURE, with_entropy=with_entropy, chunk_size=chunk_size
    )
    return [out.logprobs] if out.entropy is None else [out.logprobs, out.entropy]


METHODS = {"naive": naive, "chunked": chunked}


def _proc_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


class _LiveBytes(TorchDispatchMode):
    """Fallback tracker: bytes of op-created storages still alive, and their peak."""

    def __init__(self, *existing: Tensor) -> None:
        super().__init__()
        self.live = self.peak = 0
        self._seen = {id(t.untyped_storage()) for t in existing}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, Tensor) and id(t.untyped_storage()) not in self._seen:
                storage = t.untyped_storage()
                self._seen.add(id(storage))
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._free, id(storage), storage.nbytes())
        return out

    def _free(self, key: int, nbytes: int) -> None:
        self.live -= nbytes
        self._seen.discard(key)


def run_case(spec: str, method: str, chunk_size: int, with_entropy: bool, repeats: int) -> dict:
    """Runs one case in this process. ``spec`` is ``BxTxV:dtype``."""
    shape_text, dtype_name = spec.split(":")
    batch, tokens, vocab = (int(n) for n in shape_text.split("x"))
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(batch, tokens, vocab, generator=gen).mul_(3).to(DTYPES[dtype_name])
    logits.requires_grad_(True)
    labels = torch.randint(0, vocab, (batch, tokens), generator=gen)
    upstream = [torch.randn(batch, tokens, generator=gen) for _ in range(2)]
    fn = METHODS[method]

    def one_pass(z: Tensor, y: Tensor) -> float:
        z.grad = None
        gc.collect()
        start = time.perf_counter()
        outputs = fn(z, y, with_entropy, chunk_size)
        loss = torch.zeros(())
        for output, grad in zip(outputs, upstream[: len(outputs)], strict=True):
            loss = loss + (output * grad[: y.shape[0], : y.shape[1]]).sum()
        loss.backward()
        z.grad = None
        return (time.perf_counter() - start) * 1000

    one_pass(logits[:1, :8].detach().clone().requires_grad_(True), labels[:1, :8])  # warm-up
    gc.collect()
    rss_ok = _reset_peak_rss()
    base_kib = _proc_kib("VmRSS") if rss_ok else 0
    times = [one_pass(logits, labels)]
    rss_mb = (_proc_kib("VmHWM") - base_kib) / 1024 if rss_ok else float("nan")
    times += [one_pass(logits, labels) for _ in range(repeats - 1)]
    with _LiveBytes(logits, labels, *upstream) as live:
        one_pass(logits, labels)
    return {
        "alloc_mb": live.peak / MB,
        "rss_mb": rss_mb,
        "ms": min(times),
        "logits_mb": logits.numel() * logits.element_size() / MB,
    }


def measure(spec: str, method: str, args: argparse.Namespace) -> dict:
    """Runs one case in a fresh subprocess so peak RSS belongs to that case alone."""
    command = [sys.executable, __file__, "--one", spec, "--method", method]
    command += ["--chunk-size", str(args.chunk_size), "--repeats", str(args.repeats)]
    command += ["--no-entropy"] if args.no_entropy else []
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=DEFAULT_CASES, help="comma list of BxTxV:dtype")
    parser.add_argument("--chunk-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-entropy", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--method", choices=sorted(METHODS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    with_entropy = not args.no_entropy
    if args.one:
        print(
            json.dumps(run_case(args.one, args.method, args.chunk_size, with_entropy, args.repeats))
        )
        return
    what = "logprobs + entropy" if with_entropy else "logprobs"
    print(
        f"forward + backward of {what}, chunk_size={args.chunk_size}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads\n"
    )
    print(
        "| shape (B, T, V) | dtype | logits MB | method | peak alloc MB | peak RSS MB | time ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for spec in args.cases.split(","):
        rows = {method: measure(spec, method, args) for method in ("naive", "chunked")}
        shape_text, dtype_name = spec.split(":")
        naive_row = rows["naive"]
        for method, row in rows.items():
            alloc = f"{row['alloc_mb']:.0f} ({row['alloc_mb'] / naive_row['alloc_mb']:.2f}x)"
            rss = f"{row['rss_mb']:.0f} ({row['rss_mb'] / naive_row['rss_mb']:.2f}x)"
            ms = f"{row['ms']:.0f} ({row['ms'] / naive_row['ms']:.2f}x)"
            print(
                f"| ({shape_text.replace('x', ', ')}) | {dtype_name} | {row['logits_mb']:.0f} "
                f"| {method} | {alloc} | {rss} | {ms} |",
                flush=True,
            )
    print("\n(x) = ratio to naive. alloc: live op-created storages (what a GPU caching")
    print("allocator must hold); RSS: touched physical pages (VmHWM); see the module docstring.")


if __name__ == "__main__":
    main()
