"""The ``report.html`` page: plots, before/after evaluation, training-health signals, last
metric values, samples.

Every piece of run data (metric names, sample text from the model, the run name) passes
through :func:`html.escape`, so model output can never become markup or script; the page
also carries a Content-Security-Policy that forbids scripts, as a second line of defence.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.report.health_marks import HealthOnset
from lightrft.adapters.report.plots import RenderedPlot
from lightrft.adapters.report.reading import Series, value_at

CSP = "script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1400px; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; max-width: 60em; }
figure { display: inline-block; margin: 0.5em; }
"""


@dataclass(frozen=True)
class EvalComparison:
    """``eval/*`` metrics at the first and last steps that logged ``eval/accuracy``."""

    first_step: int
    last_step: int
    rows: tuple[tuple[str, float | None, float | None], ...]  # (name, before, after)


def eval_comparison(series: Mapping[str, Series]) -> EvalComparison | None:
    """Before/after numbers, or ``None`` when ``eval/accuracy`` was logged at < 2 steps."""
    accuracy = series.get("eval/accuracy", [])
    if len(accuracy) < 2:
        return None
    first, last = accuracy[0][0], accuracy[-1][0]
    names = ["eval/accuracy"] + sorted(
        n for n in series if n.startswith("eval/") and n != "eval/accuracy"
    )
    rows = tuple((n, value_at(series[n], first), value_at(series[n], last)) for n in names)
    return EvalComparison(first, last, rows)


def build_page(
    run_name: str,
    plots: Sequence[RenderedPlot],
    series: Mapping[str, Series],
    samples: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    max_text_chars: int = 4000,
    links: Sequence[tuple[str, str]] = (),
    health: Sequence[HealthOnset] | None = None,
) -> str:
    """The whole HTML document. ``samples``: (heading, rows) sections of sample rows;
    ``links``: (relative href, text) of pages written next to it; ``health``: the onsets
    of training-health signals (``None``: the run logged no ``health/*`` metric)."""
    name = _esc(run_name)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>LightRFT run report: {name}</title><style>{STYLE}</style></head><body>",
        f"<h1>LightRFT run report: {name}</h1>",
        "".join(f'<p><a href="{_esc(href)}">{_esc(text)}</a></p>' for href, text in links),
        _eval_section(eval_comparison(series)),
        _health_section(health),
        _plots_section(plots),
        _last_values_section(series),
        *(_samples_section(title, rows, max_text_chars) for title, rows in samples),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


def _eval_section(comparison: EvalComparison | None) -> str:
    if comparison is None:
        return ""
    first, last = comparison.first_step, comparison.last_step
    body = "".join(
        f"<tr><td>{_esc(n)}</td>{_num(before)}{_num(after)}"
        f"{_num(_delta(before, after), signed=True)}</tr>"
        for n, before, after in comparison.rows
    )
    return (
        '<h2>Evaluation before and after</h2><table id="eval">'
        f"<tr><th>metric</th><th>before (step {first})</th><th>after (step {last})</th>"
        f"<th>change</th></tr>{body}</table>"
    )


def _health_section(onsets: Sequence[HealthOnset] | None) -> str:
    if onsets is None:
        return ""
    if not onsets:
        return "<h2>Training health</h2><p>No training-health signal fired.</p>"
    rows = "".join(
        f"<tr><td>{_esc(o.signal)}</td><td class='num'>{o.step}</td>"
        f"<td class='num'>{o.steps}</td>{_num(o.value)}</tr>"
        for o in onsets
    )
    return (
        "<h2>Training health</h2><p>Signals that started firing (dashed lines on the plots; "
        "see docs/health.md):</p><table id='health'><tr><th>signal</th><th>from step</th>"
        f"<th>steps firing</th><th>value then</th></tr>{rows}</table>"
    )


def _plots_section(plots: Sequence[RenderedPlot]) -> str:
    if not plots:
        return "<h2>Plots</h2><p>No plotted metric was logged.</p>"
    figures = "".join(
        f'<figure><img src="{_esc(p.filename)}" alt="{_esc(p.title)}" width="640">'
        f"<figcaption>{_esc(', '.join(p.keys))}</figcaption></figure>"
        for p in plots
    )
    return f"<h2>Plots</h2>{figures}"


def _last_values_section(series: Mapping[str, Series]) -> str:
    rows = "".join(
        f"<tr><td>{_esc(n)}</td><td class='num'>{points[-1][0]}</td>{_num(points[-1][1])}</tr>"
        for n, points in sorted(series.items())
        if points
    )
    return (
        "<h2>Last logged values</h2><table id='last'>"
        f"<tr><th>metric</th><th>step</th><th>value</th></tr>{rows}</table>"
    )


def _samples_section(title: str, rows: Sequence[Mapping[str, Any]], max_chars: int) -> str:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(_cell(row.get(c), max_chars) for c in columns) + "</tr>" for row in rows
    )
    return f"<h2>{_esc(title)}</h2><table class='samples'><tr>{head}</tr>{body}</table>"


def _cell(value: Any, max_chars: int) -> str:
    if isinstance(value, bool) or value is None:
        return f"<td>{_esc(str(value))}</td>"
    if isinstance(value, (int, float)):
        return _num(float(value))
    text = value if isinstance(value, str) else repr(value)
    if len(text) > max_chars:
        text = f"{text[:max_chars]}… [{len(text) - max_chars} more characters]"
    return f"<td><pre>{_esc(text)}</pre></td>"


def _num(value: float | None, *, signed: bool = False) -> str:
    text = "" if value is None else format(value, "+.4g" if signed else ".4g")
    return f"<td class='num'>{_esc(text)}</td>"


def _delta(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or not math.isfinite(after - before):
        return None
    return after - before


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
