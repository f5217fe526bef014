"""``trajectories.html``: browse the saved samples of a run, step by step.

Per step: reward and length histograms of the logged samples, the rollout/training log-prob
mismatch histogram (engine log-prob minus the policy's, per token, when both were recorded),
and every sample (prompt, response, reward and per-source scores, advantage, length, finish
reason; a multi-turn sample as its turns, observations marked as not trained). Response
tokens can be shaded by log-prob, entropy or advantage. Filters (step,
reward band) and shading switches are CSS only (``:target`` and radio buttons): the page's
Content-Security-Policy forbids every script. All run data goes through ``html.escape``.
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.adapters.report.svg_histogram import svg_histogram
from lightrft.adapters.report.turns import TURN_STYLE, turns_html

CSP = "script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
BANDS = (("neg", "reward \u2264 0"), ("mid", "0 < reward < 1"), ("pos", "reward \u2265 1"))
SHADES = (("lp", "log-prob"), ("ent", "entropy"), ("adv", "advantage"))
LEVELS = 8


def _style() -> str:
    rules = [
        "body{font-family:sans-serif;margin:1.5em;max-width:1400px}",
        ".step{display:none}.step:last-child{display:block}.step:target{display:block}",
        ".step:target~.step:last-child{display:none}#steps:target .step{display:block}",
        "article{border:1px solid #ccc;margin:.6em 0;padding:.4em .6em}",
        "article header{font-size:90%;color:#333}pre{white-space:pre-wrap;margin:.3em 0}",
        ".hist{display:inline-block;margin:.3em}.hist rect{fill:#4a78b5}",
        "figcaption{font-size:80%}nav a{margin-right:.4em}.t{border-radius:2px}",
        "label{margin-right:.8em}",
        TURN_STYLE,
    ]
    for band, _ in BANDS:
        rules.append(f"#band-{band}:checked~#steps article:not(.b-{band}){{display:none}}")
    for level in range(LEVELS):
        strength = (LEVELS - 1 - level) / (LEVELS - 1)  # low probability: strong red
        rules.append(
            f"#shade-lp:checked~#steps .l{level}{{background:rgba(220,40,40,{strength:.2f})}}"
        )
        rules.append(
            f"#shade-ent:checked~#steps .e{level}{{background:rgba(40,90,220,{level / (LEVELS - 1):.2f})}}"
        )
        signed = (level - (LEVELS - 1) / 2) / ((LEVELS - 1) / 2)  # -1 .. 1
        color = "40,170,60" if signed > 0 else "220,40,40"
        rules.append(
            f"#shade-adv:checked~#steps .a{level}{{background:rgba({color},{abs(signed):.2f})}}"
        )
    return "".join(rules)


def build_trajectory_page(
    run_name: str, rows: Sequence[Mapping[str, Any]], *, max_text_chars: int = 4000
) -> str:
    """The whole HTML document for the sample ``rows`` (each with a ``step``)."""
    by_step: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_step.setdefault(int(row["step"]), []).append(row)
    steps = sorted(by_step)
    name = _esc(run_name)
    controls = [
        '<input type="radio" name="band" id="band-all" checked><label for="band-all">all</label>',
        *(
            f'<input type="radio" name="band" id="band-{b}"><label for="band-{b}">{_esc(t)}</label>'
            for b, t in BANDS
        ),
        "<br>shade tokens by: ",
        '<input type="radio" name="shade" id="shade-none" checked><label for="shade-none">none</label>',
        *(
            f'<input type="radio" name="shade" id="shade-{s}"><label for="shade-{s}">{t}</label>'
            for s, t in SHADES
        ),
    ]
    nav = "".join(f'<a href="#step-{s}">{s}</a>' for s in steps)
    sections = "".join(_step_section(s, by_step[s], max_text_chars) for s in steps)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>Trajectories: {name}</title><style>{_style()}</style></head><body>",
        f"<h1>Trajectories: {name}</h1>",
        f"<p>{len(rows)} samples over {len(steps)} steps. The last step is shown; pick a step "
        'below or <a href="#steps">show all steps</a>. Filters need no JavaScript.</p>',
        _overview(rows),
        "reward: ",
        *controls,
        f"<nav>steps: {nav}</nav>",
        f'<div id="steps">{sections}</div>',
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _overview(rows: Sequence[Mapping[str, Any]]) -> str:
    hists = _histograms(rows, "all steps")
    return f'<div class="overview">{hists}</div>' if hists else ""


def _histograms(rows: Sequence[Mapping[str, Any]], where: str) -> str:
    rewards = [float(r["reward"]) for r in rows if _is_number(r.get("reward"))]
    lengths = [float(r["length"]) for r in rows if _is_number(r.get("length"))]
    mismatch = [
        rollout - train
        for r in rows
        if r.get("rollout_logprobs") and r.get("logprobs")
        for rollout, train in zip(r["rollout_logprobs"], r["logprobs"], strict=False)
    ]
    parts = []
    if rewards:
        parts.append(svg_histogram(rewards, f"reward, {where}"))
    if lengths:
        parts.append(svg_histogram(lengths, f"length (tokens), {where}"))
    if mismatch:
        parts.append(svg_histogram(mismatch, f"rollout - training log-prob per token, {where}"))
    return "".join(parts)


def _step_section(step: int, rows: Sequence[Mapping[str, Any]], max_chars: int) -> str:
    samples = "".join(_sample(row, max_chars) for row in rows)
    return (
        f'<section class="step" id="step-{step}"><h2>Step {step}</h2>'
        f"{_histograms(rows, f'step {step}')}{samples}</section>"
    )


def _sample(row: Mapping[str, Any], max_chars: int) -> str:
    reward = row.get("reward")
    band = _band(float(reward)) if _is_number(reward) else "mid"
    facts = [
        ("reward", reward),
        ("advantage", row.get("advantage")),
        ("length", row.get("length")),
        ("finish", row.get("finish_reason")),
        ("group", row.get("group")),
    ]
    rewards = row.get("rewards")
    if isinstance(rewards, Mapping):
        facts += [(f"reward/{k}", v) for k, v in rewards.items()]
    header = " \u00b7 ".join(f"{_esc(k)} <b>{_esc(_fmt(v))}</b>" for k, v in facts if v is not None)
    prompt = _cut(str(row.get("prompt", "")), max_chars)
    return (
        f'<article class="b-{band}"><header>{header}</header>'
        f"<details><summary>prompt</summary><pre>{_esc(prompt)}</pre></details>"
        f"{turns_html(row, max_chars) or f'<pre>{_response(row, max_chars)}</pre>'}</article>"
    )


def _response(row: Mapping[str, Any], max_chars: int) -> str:
    tokens = row.get("tokens")
    if not isinstance(tokens, list) or not tokens:
        return _esc(_cut(str(row.get("response", "")), max_chars))
    n = len(tokens)
    lp, ent, adv = (_list(row.get(k))[:n] for k in ("logprobs", "entropy", "advantages"))
    probs = [math.exp(v) if v < 0 else 1.0 for v in lp]
    columns = [  # (class prefix, bucket levels, tooltip label, values)
        ("l", _levels(probs, 0.0, 1.0), "logp", lp),
        ("e", _levels(ent, 0.0, 4.0), "H", ent),
        ("a", _levels(adv, -2.0, 2.0), "A", adv),
    ]
    spans = []
    for i, token in enumerate(tokens):
        classes, tips = "t", []
        for prefix, levels, label, values in columns:
            if i < len(values):
                classes += f" {prefix}{levels[i]}"
                tips.append(f"{label} {values[i]}")
        spans.append(
            f'<span class="{classes}" title="{", ".join(tips)}">{_esc_token(token)}</span>'
        )
    return "".join(spans)


def _levels(values: list[float], low: float, high: float) -> list[int]:
    """Each value clipped to [low, high] as one of ``LEVELS`` buckets (non-finite: 0)."""
    scale = LEVELS / (high - low)
    top = LEVELS - 1
    return [
        min(top, int((min(max(v, low), high) - low) * scale)) if math.isfinite(v) else 0
        for v in values
    ]


@functools.lru_cache(maxsize=65536)
def _esc_token(token: str) -> str:
    return html.escape(token, quote=True)


def _band(reward: float) -> str:
    return "neg" if reward <= 0 else ("pos" if reward >= 1 else "mid")


def _list(value: Any) -> list[float]:
    return [float(v) for v in value] if isinstance(value, list) else []


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value: Any) -> str:
    return format(value, ".4g") if isinstance(value, float) else str(value)


def _cut(text: str, max_chars: int) -> str:
    return (
        text
        if len(text) <= max_chars
        else f"{text[:max_chars]}\u2026 [{len(text) - max_chars} more]"
    )


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
