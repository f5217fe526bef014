"""The lean host allocator policy hands freed memory back to the OS at once (glibc)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from lightrft.adapters.accelerators.host_allocator import return_freed_memory_promptly

# Runs in a fresh process (mallopt is process-wide): frees one 32 MiB block first, which
# raises glibc's dynamic mmap threshold to 32 MiB, then allocates 128 blocks of 512 KiB,
# touches them, frees every other one and prints the RSS (MiB) the freed half left behind.
_PROBE = """
import sys
import torch
from lightrft.adapters.accelerators.host_allocator import return_freed_memory_promptly
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
if sys.argv[1] == "lean":
    assert return_freed_memory_promptly()
big = torch.ones(8 * 1024 * 1024)  # 32 MiB
del big
before = rss()
blocks = [torch.ones(128 * 1024) for _ in range(128)]  # 128 x 512 KiB, touched
full = rss()
del blocks[::2]
print(rss() - before, full - before)
"""


def _held_after_free(policy: str) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, policy], capture_output=True, text=True, check=True
    )
    held, full = out.stdout.split()
    return float(held), float(full)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_lean_policy_returns_the_freed_half_that_the_default_heap_keeps() -> None:
    default_held, default_full = _held_after_free("default")
    lean_held, lean_full = _held_after_free("lean")
    assert default_full >= 60 and lean_full >= 60  # 64 MiB allocated and touched either way
    assert default_held >= 0.9 * default_full  # the heap keeps the freed half's pages
    assert lean_held <= 0.6 * lean_full  # each block was its own mapping: half is returned


@pytest.mark.parametrize("threshold", [0, -1, 64 * 1024 * 1024])
def test_threshold_outside_glibc_range_is_refused(threshold: int) -> None:
    with pytest.raises(ValueError, match="threshold_bytes"):
        return_freed_memory_promptly(threshold)
