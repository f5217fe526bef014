"""Small inline SVG histograms (no plotting library: the trajectory page stays fast)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence


def histogram_counts(values: Sequence[float], bins: int = 12) -> tuple[list[int], float, float]:
    """Counts of ``values`` in ``bins`` equal-width bins over [min, max] (finite values only);
    returns (counts, low, high). All-equal values fall into the middle bin."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [0] * bins, 0.0, 0.0
    low, high = min(finite), max(finite)
    counts = [0] * bins
    if high == low:
        counts[bins // 2] = len(finite)
        return counts, low, high
    width = (high - low) / bins
    for v in finite:
        counts[min(bins - 1, int((v - low) / width))] += 1
    return counts, low, high


def svg_histogram(
    values: Sequence[float], title: str, *, bins: int = 12, width: int = 220, height: int = 70
) -> str:
    """An ``<svg>`` bar chart of ``values`` with its title, range and count as text."""
    counts, low, high = histogram_counts(values, bins)
    top = max(counts) or 1
    bar = width / bins
    bars = "".join(
        f'<rect x="{i * bar:.1f}" y="{height - c / top * height:.1f}" '
        f'width="{max(bar - 1, 1):.1f}" height="{c / top * height:.1f}"><title>{c}</title></rect>'
        for i, c in enumerate(counts)
        if c
    )
    label = html.escape(f"{title} (n={sum(counts)}, {low:.3g} .. {high:.3g})")
    return (
        f'<figure class="hist"><svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{label}">{bars}</svg>'
        f"<figcaption>{label}</figcaption></figure>"
    )
