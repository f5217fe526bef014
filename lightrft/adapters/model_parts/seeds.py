"""Seeds derived from a run's seed: per-sample seeds shared by the rollout engines (HF, vLLM,
SGLang), and the seeds of fresh weights (LoRA adapters, value and score heads).

Both are SHA-256 digests of the base seed and a name, so they are stable across processes,
ranks and Python versions (``hash`` is salted per process).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import torch


def _seed_of(text: str) -> int:
    """A 63-bit seed from the SHA-256 digest of ``text``."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def row_seed(seed: int, prompt_uid: str, sample: int) -> int:
    """A 63-bit seed for sample ``sample`` of prompt ``prompt_uid`` under base ``seed``.

    The same whatever the batch, the batch size or the data-parallel rank that draws it.
    """
    return _seed_of(f"{seed}:{prompt_uid}:{sample}")


def component_seed(seed: int, component: str) -> int:
    """A 63-bit seed for the fresh weights of ``component`` (e.g. ``"policy.lora"``) under
    the run's ``seed``: the same on every rank, different per component."""
    return _seed_of(f"init:{seed}:{component}")


@contextmanager
def seeded_init(seed: int, component: str, device: torch.device | None = None) -> Iterator[None]:
    """Runs the block with torch's random generators seeded from ``component_seed(seed,
    component)``, and restores their previous states after it.

    The CPU generator is seeded, and also ``device``'s when it is an accelerator (modules
    may draw their initial weights there). Code after the block draws exactly what it would
    have drawn without it: seeding one initialization does not shift the global stream that
    other code (dropout, data order) depends on.
    """
    value = component_seed(seed, component)
    if device is None or device.type == "cpu":
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(value)
            yield
        return
    module = torch.get_device_module(device.type)
    index = device.index if device.index is not None else int(module.current_device())
    with torch.random.fork_rng(devices=[index], device_type=device.type):
        torch.default_generator.manual_seed(value)
        with module.device(index):
            module.manual_seed(value)  # the current device's generator only
        yield
