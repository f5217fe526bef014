"""Host allocator policy: hand freed memory back to the operating system at once (glibc).

glibc's ``malloc`` serves a request from its heap unless the request is at least the *mmap
threshold*, in which case it maps fresh pages and unmaps them on ``free``. By default that
threshold is dynamic: each time a mapped block is freed, the threshold rises to the block's
size (up to 32 MiB on 64-bit). After the first training step, then, a step's activations and
gradients (a few MiB each on small models) come from the heap, and when they are freed the
heap keeps their pages, fragmented between live blocks, unless they sit at its top above the
*trim threshold* (which rises with the mmap threshold). The process's resident set then
holds the high-water mark of one phase (rollout, forward, backward) plus the live tensors
of the next: measured on the main job, about 0.5 GB more peak RSS than the live tensors
need (docs/performance.md).

:func:`return_freed_memory_promptly` fixes both thresholds (``mallopt``; fixing either one
turns the dynamic adjustment off): blocks of at least ``threshold_bytes`` are mapped and
unmapped on their own, and free heap memory above it at the top is trimmed. The cost is a
page fault per 4 KiB page of every fresh large block (the kernel zeroes it), measured as a
few percent to about 10% more step time on CPU training steps. Elsewhere than glibc (musl,
macOS) nothing changes and it returns False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
DEFAULT_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value of both thresholds
_MAX_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc refuses larger mmap thresholds on 64-bit


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (its ``mallopt`` understands the options above)."""
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def return_freed_memory_promptly(threshold_bytes: int = DEFAULT_THRESHOLD_BYTES) -> bool:
    """Fixes glibc's mmap and trim thresholds at ``threshold_bytes`` for this process.

    Returns True when both were set, False when the C library is not glibc (nothing done).
    Raises ``ValueError`` for a threshold outside 1 byte .. 32 MiB, and ``OSError`` when
    glibc refuses a setting.
    """
    if not 0 < threshold_bytes <= _MAX_MMAP_THRESHOLD:
        raise ValueError(
            f"threshold_bytes must be in 1..{_MAX_MMAP_THRESHOLD} (32 MiB), got {threshold_bytes}"
        )
    libc = _glibc()
    if libc is None:
        return False
    for option, name in (
        (M_MMAP_THRESHOLD, "M_MMAP_THRESHOLD"),
        (M_TRIM_THRESHOLD, "M_TRIM_THRESHOLD"),
    ):
        if libc.mallopt(ctypes.c_int(option), ctypes.c_int(threshold_bytes)) != 1:
            raise OSError(f"glibc mallopt({name}, {threshold_bytes}) failed")
    return True
