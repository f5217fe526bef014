"""Trackers: the ``Tracker`` port on JSON Lines files, TensorBoard and Weights & Biases (and
the null tracker of ranks other than 0)."""

from lightrft.adapters.tracking.factory import TRACKER_NAMES, make_tracker
from lightrft.adapters.tracking.jsonl_tracker import METRICS_FILE, SAMPLES_FILE, JsonlTracker
from lightrft.adapters.tracking.multi_tracker import MultiTracker
from lightrft.adapters.tracking.null_tracker import NullTracker
from lightrft.adapters.tracking.tensorboard_tracker import TensorBoardTracker
from lightrft.adapters.tracking.wandb_tracker import WandbTracker

__all__ = [
    "METRICS_FILE",
    "SAMPLES_FILE",
    "TRACKER_NAMES",
    "JsonlTracker",
    "MultiTracker",
    "NullTracker",
    "TensorBoardTracker",
    "WandbTracker",
    "make_tracker",
]
