"""PNG line plots of training metrics over steps (matplotlib, Agg, imported lazily).

Uses ``matplotlib.figure.Figure`` directly (no ``pyplot``): no global backend switch, no GUI,
safe inside any process.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from lightrft.adapters.report.reading import Series

INSTALL_HINT = "pip install 'lightrft[report]'"


@dataclass(frozen=True)
class PlotSpec:
    """One figure: the metrics whose names match ``patterns`` (``fnmatch``), over steps."""

    filename: str
    title: str
    patterns: tuple[str, ...]

    def keys(self, names: list[str]) -> list[str]:
        """The metric names this plot shows, in pattern order then name order."""
        chosen: list[str] = []
        for pattern in self.patterns:
            chosen += sorted(n for n in names if fnmatchcase(n, pattern) and n not in chosen)
        return chosen


PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec("reward.png", "Reward", ("reward/mean", "eval/reward_mean")),
    PlotSpec("accuracy.png", "Accuracy", ("eval/accuracy", "reward/*/accuracy")),
    PlotSpec("response_length.png", "Response length (tokens)", ("response_length/mean",)),
    PlotSpec("kl.png", "KL to the reference policy", ("kl/mean",)),
    PlotSpec("entropy.png", "Policy entropy", ("train/entropy",)),
    PlotSpec("clip_fraction.png", "Clip fraction", ("policy/clip_fraction",)),
    PlotSpec("grad_norm.png", "Gradient norm (before clipping)", ("train/grad_norm",)),
    PlotSpec("lr.png", "Learning rate", ("train/lr",)),
    PlotSpec("step_time.png", "Step time (s)", ("time/step_s",)),
    PlotSpec("health.png", "Training-health signals firing", ("health/alarm",)),
)


@dataclass(frozen=True)
class RenderedPlot:
    """A PNG written next to the report, and the metrics it shows."""

    filename: str
    title: str
    keys: tuple[str, ...]


def render_plots(
    series: dict[str, Series], out_dir: Path, marks: Sequence[int] = ()
) -> list[RenderedPlot]:
    """Writes one PNG per :data:`PLOTS` entry whose metrics exist; removes stale ones.

    ``marks``: steps drawn as dashed vertical lines on every plot (where a training-health
    signal started)."""
    figure_cls, canvas_cls = _matplotlib()
    rendered: list[RenderedPlot] = []
    for spec in PLOTS:
        keys = spec.keys(list(series))
        path = out_dir / spec.filename
        if not keys:
            path.unlink(missing_ok=True)  # from an earlier render with other metrics
            continue
        figure = figure_cls(figsize=(6.4, 3.6), dpi=100)
        canvas_cls(figure)
        axes = figure.add_subplot()
        for key in keys:
            _plot_series(axes, key, series[key])
        for i, step in enumerate(marks):
            label = "health signal" if i == 0 else None
            axes.axvline(step, color="tab:red", linestyle="--", alpha=0.6, label=label)
        axes.set_title(spec.title)
        axes.set_xlabel("step")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize="small")
        figure.tight_layout()
        figure.savefig(path, format="png")
        rendered.append(RenderedPlot(spec.filename, spec.title, tuple(keys)))
    return rendered


def _plot_series(axes: Any, key: str, points: Series) -> None:
    steps = [step for step, _ in points]
    values = [value for _, value in points]
    sparse = key.startswith("eval/") or len(points) <= 30
    axes.plot(steps, values, label=key, marker="o" if sparse else None, markersize=3)


def _matplotlib() -> tuple[Any, Any]:
    try:
        figure = importlib.import_module("matplotlib.figure")
        agg = importlib.import_module("matplotlib.backends.backend_agg")
    except ImportError as error:
        raise ImportError(
            f"the run report needs the 'matplotlib' package, which is not installed: {INSTALL_HINT}"
        ) from error
    return figure.Figure, agg.FigureCanvasAgg
