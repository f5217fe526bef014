"""`lightrft serve-reward`: serve one configured reward source over HTTP.

    lightrft serve-reward [--config FILE] [--source NAME] [--host H] [--port P] [--no-auth]
                          [key=value ...]

The source comes from ``reward.sources`` (e.g. ``'reward.sources=[{type: scalar_rm, path:
runs/rm/model}]'``). Binds 127.0.0.1 unless told otherwise. Every request needs the bearer
token in ``$LIGHTRFT_REWARD_TOKEN`` (or the variable named by ``--token-env``); without one
the command refuses to start, unless ``--no-auth`` is given and the host is loopback.
OpenRLHF's and the original LightRFT's reward clients are answered on ``/get_reward`` and
``/original/get_reward`` (the token as ``?token=`` in the URL, since they send no header).
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "serve-reward"
HELP = "serve a configured reward source over HTTP (FastAPI + uvicorn)"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="YAML config file")
    parser.add_argument("--source", help="name of the reward source to serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--token-env", default="LIGHTRFT_REWARD_TOKEN", help="variable holding the bearer token"
    )
    parser.add_argument("--max-batch", type=int, default=1024, help="samples per request")
    parser.add_argument("--max-request-bytes", type=int, default=8 * 2**20)
    parser.add_argument("--micro-batch", type=int, default=64, help="samples per source call")
    parser.add_argument("--batch-window-ms", type=float, default=5.0)
    parser.add_argument(
        "--media-root", help="serve requests' local image / audio paths from under this folder"
    )
    parser.add_argument(
        "--max-media-bytes", type=int, default=16 * 2**20, help="bytes per image / audio item"
    )
    parser.add_argument("--max-media-items", type=int, default=32, help="media per request")
    parser.add_argument(
        "--header-timeout-s",
        type=float,
        default=10.0,
        help="close a connection whose request headers are not complete after this long",
    )
    parser.add_argument(
        "--body-timeout-s",
        type=float,
        default=30.0,
        help="answer 408 to a request whose body has not arrived this long after its headers",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="serve a loopback host without a token (every local process can call it)",
    )


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.adapters.reward_protocols import SERVED_PATHS
    from lightrft.adapters.reward_service import serve
    from lightrft.entrypoints.config.loading import load_config
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.serve_reward import ServeOptions, build_app

    options = copy_fields(
        ServeOptions,
        args,
        "source host port token_env max_batch max_request_bytes batch_window_ms no_auth "
        "media_root max_media_bytes max_media_items header_timeout_s body_timeout_s",
        micro_batch_samples=args.micro_batch,
    )
    app = build_app(load_config(args.config, rest), options)
    paths = ", ".join(["/score", "/health", *SERVED_PATHS])
    print(f"serving on http://{options.host}:{options.port} ({paths})", flush=True)
    serve(app, host=options.host, port=options.port)
    return 0
