"""Per-sample seeds shared by the rollout engines (HF, vLLM, SGLang)."""

from __future__ import annotations

import hashlib


def row_seed(seed: int, prompt_uid: str, sample: int) -> int:
    """A 63-bit seed for sample ``sample`` of prompt ``prompt_uid`` under base ``seed``.

    Stable across processes and Python versions (SHA-256, not ``hash``), so a completion is
    the same whatever the batch, the batch size or the data-parallel rank that draws it.
    """
    digest = hashlib.sha256(f"{seed}:{prompt_uid}:{sample}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)
