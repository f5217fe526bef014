"""`lightrft chat --model DIR`: a small read-eval-print loop with a model, through its chat
template. Lines come from ``stdin`` (a terminal or a pipe); ``/image PATH`` adds an image to
the next query (vision-language models), ``/reset`` forgets the conversation and the images,
``/exit`` (or end of input) ends it.

``--batch FILE`` (the original LightRFT's batch mode): a JSON list of ``{"query": ...,
"images": [paths], "expected": ...}``, each answered in a fresh conversation; the results
(``query``, ``images``, ``response``, ``expected``) are printed and, with ``--output``,
written as a JSON list.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lightrft.adapters.hf.chat import ChatInputTooLong
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.roots.chat import ChatParts, chat_parts

PROMPT = "you> "


@dataclass(frozen=True)
class ChatOptions:
    """The model, how to sample its replies, and the batch file mode's files."""

    model: Path | None
    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.9
    system: str | None = None
    seed: int = 0
    images: tuple[Path, ...] = ()
    batch: Path | None = None
    output: Path | None = None
    device: str | None = None


@dataclass(frozen=True)
class BatchItem:
    """One query of a batch file: its text, image paths and expected answer (if any)."""

    query: str
    images: tuple[Path, ...]
    shown_images: tuple[str, ...]
    expected: Any = None


def chat(options: ChatOptions, lines: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
    """Answers each line of ``lines`` (or each query of ``options.batch``) on ``out``."""
    items = read_batch(options.batch) if options.batch is not None else None
    missing = [str(p) for p in options.images if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"--image: no file {', '.join(missing)}")
    sampling = SamplingParams(
        n=1,
        temperature=options.temperature,
        top_p=options.top_p,
        max_new_tokens=options.max_new_tokens,
        seed=options.seed,
    )
    parts = chat_parts(options.model, sampling, options.system, options.device)
    with_images = [i for i, item in enumerate(items or [], 1) if item.images]
    if (options.images or with_images) and not parts.session.reads_images:
        where = f"{options.batch} items {with_images}" if with_images else "--image"
        raise ValueError(
            f"{where}: images need a vision-language model (Qwen2-VL or Qwen2.5-VL), but "
            f"{parts.model} holds a {parts.modality} model"
        )
    if items is not None:
        return _batch(parts, items, options.output, out)
    return _interactive(parts, list(options.images), lines, out)


def _interactive(parts: ChatParts, images: list[Path], lines: TextIO, out: TextIO) -> int:
    session = parts.session
    interactive = lines.isatty()
    commands = "/image PATH adds an image, " if session.reads_images else ""
    print(
        f"chatting with {parts.model} on {parts.device}; {commands}/reset forgets, /exit ends",
        file=out,
    )
    while True:
        if interactive:
            print(PROMPT, end="", file=out, flush=True)
        text = lines.readline()
        command, _, argument = text.strip().partition(" ")
        if not text or command == "/exit":
            return 0
        if command == "/reset":
            session.reset()
            images = []
            print("(conversation reset)", file=out)
        elif command == "/image":
            images = _add_image(session.reads_images, argument.strip(), images, out)
        elif text.strip():
            try:
                reply = session.reply(text.strip(), [open_image(p) for p in images])
            except ChatInputTooLong as refused:  # one line; the conversation goes on
                print(f"lightrft: refused: {refused}", file=out, flush=True)
            else:
                print(f"model> {reply}", file=out, flush=True)
            images = []  # one query's images, as the original


def _add_image(reads_images: bool, argument: str, images: list[Path], out: TextIO) -> list[Path]:
    """``images`` with the image ``argument`` added (a message when it cannot be)."""
    path = Path(argument)
    if not reads_images:
        print("(/image needs a vision-language model; this one reads text)", file=out)
    elif not argument or not path.is_file():
        print(f"(/image: no file {argument!r})", file=out)
    else:
        print(f"(image {path} goes with the next query)", file=out)
        return [*images, path]
    return images


def _batch(parts: ChatParts, items: list[BatchItem], output: Path | None, out: TextIO) -> int:
    session = parts.session
    results = []
    for i, item in enumerate(items, 1):
        session.reset()  # each query alone
        reply = session.reply(item.query, [open_image(p) for p in item.images])
        print(f"[{i}/{len(items)}] {item.query}\nmodel> {reply}", file=out, flush=True)
        result: dict[str, Any] = {
            "query": item.query,
            "images": list(item.shown_images),
            "response": reply,
        }
        if item.expected:
            result["expected"] = item.expected
        results.append(result)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"results: {output}", file=out)
    return 0


def read_batch(path: Path) -> list[BatchItem]:
    """The queries of a batch file; ``ValueError`` listing every problem (one per line).
    An image path is taken as written, else relative to the batch file's folder."""
    if not path.is_file():
        raise FileNotFoundError(f"--batch: no file {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"--batch {path} is not JSON: {exc}") from None
    if not isinstance(data, list):
        raise ValueError(f"--batch {path}: expected a JSON list of queries")
    items, problems = [], []
    for i, raw in enumerate(data, 1):
        where = f"{path} item {i}"
        query = raw.get("query") if isinstance(raw, dict) else None
        if not isinstance(query, str) or not query.strip():
            problems.append(f"{where}: expected an object with a non-empty 'query' string")
            continue
        shown = raw.get("images") or []
        if not isinstance(shown, list) or not all(isinstance(p, str) for p in shown):
            problems.append(f"{where}: 'images' must be a list of paths")
            continue
        found = [_image_path(p, path.parent) for p in shown]
        problems += [f"{where}: no image {p}" for p, f in zip(shown, found, strict=True) if not f]
        images = tuple(f for f in found if f is not None)
        items.append(BatchItem(query, images, tuple(shown), raw.get("expected")))
    if problems:
        raise ValueError("\n".join(problems))
    return items


def _image_path(text: str, folder: Path) -> Path | None:
    for path in (Path(text), folder / text):
        if path.is_file():
            return path
    return None


def open_image(path: Path) -> Any:
    """The image at ``path`` as RGB."""
    from PIL import Image

    with Image.open(path) as image:
        return image.convert("RGB")
