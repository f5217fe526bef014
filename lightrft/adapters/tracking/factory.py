"""``make_tracker``: builds the trackers a run asks for by name."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lightrft.adapters.tracking.jsonl_tracker import JsonlTracker
from lightrft.adapters.tracking.multi_tracker import MultiTracker
from lightrft.adapters.tracking.tensorboard_tracker import TensorBoardTracker
from lightrft.adapters.tracking.wandb_tracker import WandbTracker
from lightrft.domain.ports import Tracker

TENSORBOARD_SUBDIR = "tensorboard"

_BUILDERS: dict[str, Callable[..., Tracker]] = {
    "jsonl": lambda run_dir, **kw: JsonlTracker(run_dir, **kw),
    "tensorboard": lambda run_dir, **kw: TensorBoardTracker(run_dir / TENSORBOARD_SUBDIR, **kw),
    "wandb": lambda run_dir, **kw: WandbTracker(run_dir, **kw),
}
TRACKER_NAMES: tuple[str, ...] = tuple(_BUILDERS)


def make_tracker(names: Sequence[str], run_dir: Path, **opts: Mapping[str, Any]) -> Tracker:
    """The trackers ``names`` (``"jsonl"``, ``"tensorboard"``, ``"wandb"``) writing to ``run_dir``.

    ``opts`` holds per-tracker keyword arguments keyed by tracker name, e.g.
    ``make_tracker(["jsonl", "wandb"], run_dir, wandb={"project": "grpo"})``. TensorBoard
    writes to ``run_dir/tensorboard``. One name gives that tracker, several (or none) a
    :class:`MultiTracker`.
    """
    unknown = [name for name in (*names, *opts) if name not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown tracker {unknown}; valid choices: {', '.join(TRACKER_NAMES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"tracker names repeat: {list(names)}")
    unused = sorted(set(opts) - set(names))
    if unused:
        raise ValueError(f"options given for trackers that are not enabled: {unused}")
    run_dir = Path(run_dir)
    trackers: list[Tracker] = []
    try:
        for name in names:
            trackers.append(_BUILDERS[name](run_dir, **dict(opts.get(name, {}))))
    except BaseException:
        with contextlib.suppress(Exception):  # the build error is the one to report
            MultiTracker(trackers).close()
        raise
    return trackers[0] if len(trackers) == 1 else MultiTracker(trackers)
