"""`lightrft chat --model DIR`: a small read-eval-print loop with a model, through its chat
template. Lines come from ``stdin`` (a terminal or a pipe); ``/reset`` forgets the
conversation, ``/exit`` (or end of input) ends it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from lightrft.adapters.hf.chat import ChatInputTooLong
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.roots.chat import chat_parts

PROMPT = "you> "


@dataclass(frozen=True)
class ChatOptions:
    """The model and how to sample its replies."""

    model: Path | None
    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.9
    system: str | None = None
    seed: int = 0


def chat(options: ChatOptions, lines: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
    """Answers each line of ``lines`` on ``out``; returns 0 at ``/exit`` or end of input."""
    sampling = SamplingParams(
        n=1,
        temperature=options.temperature,
        top_p=options.top_p,
        max_new_tokens=options.max_new_tokens,
        seed=options.seed,
    )
    parts = chat_parts(options.model, sampling, options.system)
    session = parts.session
    interactive = lines.isatty()
    print(f"chatting with {parts.model} on {parts.device}; /reset forgets, /exit ends", file=out)
    while True:
        if interactive:
            print(PROMPT, end="", file=out, flush=True)
        text = lines.readline()
        if not text or text.strip() == "/exit":
            return 0
        if text.strip() == "/reset":
            session.reset()
            print("(conversation reset)", file=out)
        elif text.strip():
            try:
                print(f"model> {session.reply(text.strip())}", file=out, flush=True)
            except ChatInputTooLong as refused:  # one line; the conversation goes on
                print(f"lightrft: refused: {refused}", file=out, flush=True)
