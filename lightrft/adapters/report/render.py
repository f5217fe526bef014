"""``render_report``: turns a run directory's JSONL logs into PNG plots and ``report.html``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lightrft.adapters.report.health_marks import health_onsets
from lightrft.adapters.report.html_page import build_page
from lightrft.adapters.report.plots import render_plots
from lightrft.adapters.report.reading import metric_series, read_jsonl
from lightrft.adapters.report.trajectories import build_trajectory_page

METRICS_FILE = "metrics.jsonl"
SAMPLES_FILE = "samples.jsonl"
REPORT_FILE = "report.html"
TRAJECTORIES_FILE = "trajectories.html"


def render_report(
    run_dir: Path,
    out_dir: Path | None = None,
    *,
    max_samples_per_step: int = 8,
    max_text_chars: int = 4000,
) -> Path:
    """Writes the plots and ``report.html`` for ``run_dir``; returns the HTML file's path.

    Reads ``run_dir/metrics.jsonl`` (required) and ``run_dir/samples.jsonl`` (optional).
    Output goes to ``out_dir`` (default ``run_dir/report``): one PNG per plotted metric
    group (skipped when its metrics were never logged) and ``report.html``, which refers to
    the PNGs by relative path. Training-health signals (``health/fired/*``) get a table of
    where each started, and dashed lines at those steps on the plots. Samples shown: those of the first and of the last logged
    step, at most ``max_samples_per_step`` each; texts are cut at ``max_text_chars``. With
    samples, ``trajectories.html`` (every saved sample, by step) is written too and linked.
    """
    run_dir = Path(run_dir)
    metrics_path = run_dir / METRICS_FILE
    if not metrics_path.is_file():
        raise FileNotFoundError(f"no {METRICS_FILE} in {run_dir}: is it a LightRFT run directory?")
    out = Path(out_dir) if out_dir is not None else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    series = metric_series(read_jsonl(metrics_path))
    onsets = health_onsets(series)
    plots = render_plots(series, out, sorted({onset.step for onset in onsets}))
    samples_path = run_dir / SAMPLES_FILE
    rows = read_jsonl(samples_path) if samples_path.is_file() else []
    links: list[tuple[str, str]] = []
    if rows:
        trajectories = build_trajectory_page(
            run_dir.resolve().name, rows, max_text_chars=max_text_chars
        )
        (out / TRAJECTORIES_FILE).write_text(trajectories, encoding="utf-8")
        links.append((TRAJECTORIES_FILE, f"Trajectory browser ({len(rows)} samples)"))
    page = build_page(
        run_dir.resolve().name,
        plots,
        series,
        _sample_sections(rows, max_samples_per_step),
        max_text_chars=max_text_chars,
        links=links,
        health=onsets if any(name.startswith("health/") for name in series) else None,
    )
    report = out / REPORT_FILE
    report.write_text(page, encoding="utf-8")
    return report


def _sample_sections(
    rows: Sequence[Mapping[str, Any]], per_step: int
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Rows of the first and the last step that logged samples (the last version of each)."""
    if not rows or per_step <= 0:
        return []
    steps = sorted({int(row["step"]) for row in rows})
    sections: list[tuple[str, list[Mapping[str, Any]]]] = []
    for label, step in (("first", steps[0]), ("last", steps[-1])):
        if label == "last" and step == steps[0]:
            break
        of_step: list[Mapping[str, Any]] = [
            {k: v for k, v in row.items() if k != "step"}
            for row in rows
            if int(row["step"]) == step
        ]
        sections.append((f"Samples at step {step} ({label})", of_step[-per_step:]))
    return sections
