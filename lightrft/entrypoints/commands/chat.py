"""`lightrft chat [--model DIR]`: talk to a model (a run's final_model, an exported
checkpoint, any Hugging Face directory; default: the embedded SmolLM2-135M-Instruct)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "chat"
HELP = "chat with a model through its chat template"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, help="model directory (default: the embedded one)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="reply length limit")
    parser.add_argument("--temperature", type=float, default=0.7, help="0: greedy")
    parser.add_argument("--top-p", type=float, default=0.9, help="nucleus sampling mass")
    parser.add_argument("--system", help="system message of the conversation")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    if rest:
        raise ValueError(f"unexpected arguments {rest}")
    if args.max_new_tokens <= 0 or args.temperature < 0 or not 0 < args.top_p <= 1:
        raise ValueError("--max-new-tokens must be > 0, --temperature >= 0, --top-p in (0, 1]")
    from lightrft.entrypoints.jobs.chat import ChatOptions, chat

    options = ChatOptions(
        args.model, args.max_new_tokens, args.temperature, args.top_p, args.system, args.seed
    )
    return chat(options)
