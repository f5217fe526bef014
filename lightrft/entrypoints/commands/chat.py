"""`lightrft chat [--model DIR]`: talk to a model (a run's final_model, an exported
checkpoint, any Hugging Face directory; default: the embedded SmolLM2-135M-Instruct).

The flags of the original LightRFT's ``examples/chat/test_chat.py`` (what its chat.sh runs)
are read with their meaning: ``--model_path`` (or ``--pretrain``), ``--max_tokens`` (or
``--max_new_tokens`` / ``--generate_max_len``), ``--temperature``, ``--top_p``,
``--system_prompt``, ``--image``, ``--batch FILE --output FILE``, ``--device``; chat.sh's
modes are ``--mode interactive|batch|greedy|creative``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "chat"
HELP = "chat with a model through its chat template"

DEFAULT_SAMPLING = {"temperature": 0.7, "top_p": 0.9}
MODES: dict[str, dict[str, float]] = {
    "interactive": {},
    "batch": {},
    "greedy": {"temperature": 0.0},
    "creative": {"temperature": 1.0, "top_p": 0.9},
}
"""chat.sh's modes as sampling settings (an explicit --temperature / --top-p wins)."""


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        "--model_path",
        "--model-path",
        "--pretrain",
        type=Path,
        help="model directory (default: the embedded one)",
    )
    parser.add_argument(
        "--max-new-tokens",
        "--max_new_tokens",
        "--max_tokens",
        "--max-tokens",
        "--generate_max_len",
        type=int,
        default=256,
        help="reply length limit",
    )
    parser.add_argument("--temperature", type=float, help="0: greedy (default 0.7)")
    parser.add_argument("--top-p", "--top_p", type=float, help="nucleus sampling mass (0.9)")
    parser.add_argument(
        "--system", "--system_prompt", "--system-prompt", help="system message of the chat"
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument(
        "--mode",
        choices=sorted(MODES),
        default="interactive",
        help="chat.sh's modes: greedy (temperature 0), creative (temperature 1, top-p 0.9), "
        "batch (with --batch)",
    )
    parser.add_argument(
        "--image",
        type=Path,
        action="append",
        default=[],
        help="an image for the first query (vision-language models; repeatable)",
    )
    parser.add_argument(
        "--batch",
        type=Path,
        help='a JSON list of {"query", "images", "expected"} answered one by one',
    )
    parser.add_argument("--output", type=Path, help="where --batch writes its results (JSON)")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda if there is one")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    problems = []
    unknown = [arg for arg in rest if arg.startswith("-")]
    if unknown:
        problems.append(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: not a "
            "flag of lightrft chat or of the original's test_chat.py (`lightrft chat -h`)"
        )
    elif rest:
        problems.append(f"unexpected arguments {rest}")
    sampling = {**DEFAULT_SAMPLING, **MODES[args.mode]}
    if args.temperature is not None:
        sampling["temperature"] = args.temperature
    if args.top_p is not None:
        sampling["top_p"] = args.top_p
    if args.max_new_tokens <= 0 or sampling["temperature"] < 0 or not 0 < sampling["top_p"] <= 1:
        problems.append("--max-new-tokens must be > 0, --temperature >= 0, --top-p in (0, 1]")
    if args.mode == "batch" and args.batch is None:
        problems.append("--mode batch needs --batch FILE (a JSON list of queries)")
    if args.output is not None and args.batch is None:
        problems.append("--output writes --batch's results; give --batch FILE")
    if problems:
        raise ValueError("\n".join(problems))
    from lightrft.entrypoints.jobs.chat import ChatOptions, chat

    options = ChatOptions(
        args.model,
        args.max_new_tokens,
        sampling["temperature"],
        sampling["top_p"],
        args.system,
        args.seed,
        images=tuple(args.image),
        batch=args.batch,
        output=args.output,
        device=args.device,
    )
    return chat(options)
