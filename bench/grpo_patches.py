"""Bench-only prototypes of speed changes to LightRFT, applied by monkeypatching.

Used by ``bench_vs_trl.py --sides ours,proto --patch NAME[,NAME...]`` (side ``proto`` only)
to measure what a proposed library change would gain before building it; nothing here is
imported by ``lightrft``. The earlier prototypes (vectorized draw, one prefill per distinct
prompt, engine on the policy's weights, group-ordered micro-batches, prefix-shared
training forward, compiled decode steps) are now part of the library and were removed from here.

- ``no_entropy``: the training forward skips the entropy when no loss term uses it
  (entropy_coef 0, no high-entropy mask); the ``train/entropy`` metric is then absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

PATCHES: dict[str, Callable[[Any], None]] = {}


def patch(name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        PATCHES[name] = fn
        return fn

    return register


def apply(names: Sequence[str], container: Any) -> None:
    """Applies the named patches to the objects built by ``container`` (before any step)."""
    for name in names:
        if name not in PATCHES:
            raise SystemExit(f"unknown patch {name!r}; known: {', '.join(PATCHES)}")
        PATCHES[name](container)


@patch("no_entropy")
def _patch_no_entropy(container: Any) -> None:
    policy = container.policy()
    algorithm = container.cycle().settings.algorithm
    if algorithm.entropy_coef > 0 or algorithm.high_entropy_fraction is not None:
        return
    original = policy.forward

    def forward(batch: Any, *, temperature: float = 1.0, with_entropy: bool = False) -> Any:
        return original(batch, temperature=temperature, with_entropy=False)

    policy.forward = forward
