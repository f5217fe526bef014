"""Kept judgements as SFT rows (the layout :mod:`~lightrft.adapters.datasets.sft_rows` reads).

A judge prompt row (:func:`~lightrft.adapters.datasets.judge_pairs.judge_pair_row`) and one
judgement of it become:

- text prompts: ``{"prompt": judge prompt, "completion": judgement}``;
- prompts with images or videos: ``{"messages": [user, assistant]}``, the user message's content the
  prompt's text split at its ``<image>`` markers with an image part in each place
  (``{"type": "image", "image": "images/<stem>-<k>.png"}``, the image saved as PNG beside
  the rows file, path relative to it), the assistant message the judgement; videos likewise
  at their ``<video>`` markers, ``{"type": "video", "video": <the file's absolute path>}``.

So ``lightrft sft --data rows.jsonl`` trains the judgement tokens with the judge prompt as
context, rendered by the judge's chat template as at sampling time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.multimodal_rows import IMAGE_MARKER, VIDEO_MARKER


def judge_sft_row(
    prompt_row: Mapping[str, Any], judgement: str, out_dir: Path, stem: str
) -> dict[str, Any]:
    """The SFT row of ``judgement`` of ``prompt_row``; its images are written to
    ``out_dir/images`` (once per ``stem``), its videos named by their files."""
    prompt = str(prompt_row["prompt"])
    media = {
        "image": list(prompt_row.get("images", ())),
        "video": list(prompt_row.get("videos", ())),
    }
    if not any(media.values()):
        return {"prompt": prompt, "completion": judgement}
    pieces = [p for p in re.split(f"({IMAGE_MARKER}|{VIDEO_MARKER})", prompt) if p]
    marked = {kind: sum(p == f"<{kind}>" for p in pieces) for kind in media}
    if any(marked[kind] != len(items) for kind, items in media.items()):
        counts = ", ".join(f"{marked[k]} <{k}> markers for {len(v)} {k}s" for k, v in media.items())
        raise ValueError(f"judge prompt {stem}: {counts}")
    if media["image"]:
        (out_dir / "images").mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, Any]] = []
    taken = {"image": 0, "video": 0}
    for piece in pieces:
        kind = piece[1:-1] if piece in (IMAGE_MARKER, VIDEO_MARKER) else None
        if kind is None:
            parts.append({"type": "text", "text": piece})
            continue
        k = taken[kind]
        taken[kind] += 1
        if kind == "video":
            parts.append({"type": "video", "video": str(media["video"][k])})
            continue
        name = f"images/{stem}-{k}.png"
        if not (out_dir / name).exists():
            media["image"][k].save(out_dir / name)
        parts.append({"type": "image", "image": name})
    return {
        "messages": [
            {"role": "user", "content": parts},
            {"role": "assistant", "content": judgement},
        ]
    }
