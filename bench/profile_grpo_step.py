"""Profiles one LightRFT GRPO step (the ``bench_vs_trl.py`` workload) on CPU.

Run: ``OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 .venv/bin/python bench/profile_grpo_step.py``
(same size flags as ``bench_vs_trl.py``; ``--proto`` applies its ``--patch`` prototypes). After ``--warmup`` steps it profiles one step with
``cProfile`` (Python functions, sorted by cumulative and by own time) and/or
``torch.profiler`` (aten ops by self CPU time), ``--mode cprofile|torch|both``.
``--top`` sets the rows printed; ``--dump PATH`` writes the cProfile stats for snakeviz.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_vs_trl as bvt  # noqa: E402


def main() -> None:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--mode", default="both", choices=["cprofile", "torch", "both"])
    extra.add_argument("--top", type=int, default=30)
    extra.add_argument("--dump", default=None)
    extra.add_argument("--proto", action="store_true", help="apply --patch (grpo_patches.py)")
    mine, rest = extra.parse_known_args()
    a = bvt.parse_args(rest)

    import torch

    from lightrft.entrypoints.api import build_container

    bvt._set_threads(a.threads)
    bvt._quiet_logs()
    container = build_container(bvt._load_config(a, bvt.scratch_dir("profile_grpo_")))
    cycle = container.cycle()
    if mine.proto:
        import grpo_patches

        grpo_patches.apply(a.patch.split(","), container)
    for _ in range(a.warmup):
        cycle.train_step()
    if mine.mode in ("cprofile", "both"):
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        m = cycle.train_step()
        prof.disable()
        print(
            f"cProfile step: {time.perf_counter() - t0:.2f}s; phases: "
            + ", ".join(f"{k[5:-2]}={v:.2f}s" for k, v in m.items() if k.startswith("time/"))
        )
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats(key).print_stats(mine.top)
            print(f"\n===== cProfile by {key} =====")
            print(out.getvalue())
        if mine.dump:
            prof.dump_stats(mine.dump)
    if mine.mode in ("torch", "both"):
        from torch.profiler import ProfilerActivity, profile

        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU]) as tprof:
            m = cycle.train_step()
        print(f"torch.profiler step: {time.perf_counter() - t0:.2f}s")
        print(tprof.key_averages().table(sort_by="self_cpu_time_total", row_limit=mine.top))
        del torch


if __name__ == "__main__":
    main()
