"""The turns of a multi-turn sample in ``trajectories.html``: model turns (trained) and
observations (tool results, user messages: loss mask 0, not trained), each marked."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

TURN_STYLE = (
    ".turn{margin:.2em 0;padding:.2em .5em;white-space:pre-wrap;font-family:monospace}"
    ".turn.gen{border-left:4px solid #2a8a3a}"
    ".turn.obs{border-left:4px dashed #999;background:#f1f1f1;color:#444}"
    ".turn small{display:block;font-family:sans-serif;color:#666}"
)


def turns_html(row: Mapping[str, Any], max_chars: int) -> str:
    """The row's turns as marked blocks, or "" when the row is not an episode."""
    turns = row.get("turns")
    if not isinstance(turns, list) or not turns:
        return ""
    blocks = []
    model_turn = 0
    for turn in turns:
        text = str(turn.get("text", ""))
        text = text if len(text) <= max_chars else text[:max_chars] + "\u2026"
        tokens = turn.get("tokens")
        if turn.get("trained"):
            model_turn += 1
            label = f"model turn {model_turn} \u00b7 {tokens} tokens \u00b7 trained (loss mask 1)"
            kind = "gen"
        else:
            label = f"observation \u00b7 {tokens} tokens \u00b7 not trained (loss mask 0)"
            kind = "obs"
        blocks.append(
            f'<div class="turn {kind}"><small>{html.escape(label)}</small>{html.escape(text)}</div>'
        )
    facts = [f"ended: {row.get('end_reason')}"]
    rewards = row.get("turn_rewards")
    if isinstance(rewards, list):
        facts.append("turn rewards: " + ", ".join(f"{r:g}" for r in rewards))
    counters = row.get("counters")
    if isinstance(counters, Mapping):
        facts += [f"{k}: {v:g}" for k, v in counters.items()]
    summary = html.escape(" \u00b7 ".join(facts))
    return f'<div class="turns"><small>{summary}</small>{"".join(blocks)}</div>'
