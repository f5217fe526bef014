"""Kept judgements as SFT rows (the layout :mod:`~lightrft.adapters.datasets.sft_rows` reads).

A judge prompt row (:func:`~lightrft.adapters.datasets.judge_pairs.judge_pair_row`) and one
judgement of it become:

- text prompts: ``{"prompt": judge prompt, "completion": judgement}``;
- prompts with images: ``{"messages": [user, assistant]}``, the user message's content the
  prompt's text split at its ``<image>`` markers with an image part in each place
  (``{"type": "image", "image": "images/<stem>-<k>.png"}``, the image saved as PNG beside
  the rows file, path relative to it), the assistant message the judgement.

So ``lightrft sft --data rows.jsonl`` trains the judgement tokens with the judge prompt as
context, rendered by the judge's chat template as at sampling time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.multimodal_rows import IMAGE_MARKER


def judge_sft_row(
    prompt_row: Mapping[str, Any], judgement: str, out_dir: Path, stem: str
) -> dict[str, Any]:
    """The SFT row of ``judgement`` of ``prompt_row``; its images are written to
    ``out_dir/images`` (once per ``stem``)."""
    prompt, images = str(prompt_row["prompt"]), list(prompt_row.get("images", ()))
    if not images:
        return {"prompt": prompt, "completion": judgement}
    pieces = prompt.split(IMAGE_MARKER)
    if len(pieces) - 1 != len(images):
        raise ValueError(
            f"judge prompt {stem}: {len(pieces) - 1} {IMAGE_MARKER} markers for {len(images)} images"
        )
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, Any]] = []
    for k, piece in enumerate(pieces):
        if piece:
            parts.append({"type": "text", "text": piece})
        if k < len(images):
            name = f"images/{stem}-{k}.png"
            if not (out_dir / name).exists():
                images[k].save(out_dir / name)
            parts.append({"type": "image", "image": name})
    return {
        "messages": [
            {"role": "user", "content": parts},
            {"role": "assistant", "content": judgement},
        ]
    }


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: Path) -> int:
    """Writes ``rows`` as JSON lines (atomically: a temporary file renamed); returns the
    number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    count = 0
    with temporary.open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    temporary.replace(path)
    return count
