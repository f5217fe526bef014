"""The `lightrft` console script.

    lightrft train ALGORITHM [--config FILE] [--nproc-per-node N]
                   [--resume | --resume=auto | --overwrite] [key=value ...]
    lightrft eval [--config FILE] [--model PATH] [--output FILE] [key=value ...]
    lightrft config show ALGORITHM [--config FILE] [key=value ...]
    lightrft report RUN_DIR
    lightrft demo [key=value ...]
    lightrft checkpoints verify RUN_DIR

Each subcommand is a module of :mod:`lightrft.entrypoints.commands`. Overrides are dotted
``key=value`` pairs (``optim.lr=1e-5``) or LightRFT/OpenRLHF flags (``--n_samples_per_prompt
8``). Every problem with a config exits with status 2 and a message naming the key; errors a
user can act on print no traceback unless ``--debug`` (or ``LIGHTRFT_DEBUG=1``), see
:mod:`lightrft.entrypoints.user_errors`. Building the parser imports no torch (the command
modules import their jobs inside ``run``), so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from lightrft.domain.registry import Registry
from lightrft.entrypoints.commands import load_commands
from lightrft.entrypoints.user_errors import debug_requested, is_user_error, report_error


def _parser(commands: Registry[ModuleType]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lightrft", description=__doc__.split("\n")[0])
    parser.add_argument("--json-logs", action="store_true", help="log JSON lines")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks of errors (or LIGHTRFT_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in commands.names():
        module = commands.get(name)
        command = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_parser(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    commands = load_commands()
    args, rest = _parser(commands).parse_known_args(argv)
    args.argv = tuple(sys.argv[1:] if argv is None else argv)  # for "run this next" messages
    debug, rest = debug_requested(args.debug, rest)
    try:
        from lightrft.entrypoints.logging_setup import configure_logging

        configure_logging(json_logs=args.json_logs)
        return int(commands.get(args.command).run(args, rest))
    except Exception as exc:
        if not is_user_error(exc):
            raise
        return report_error(exc, debug=debug)


if __name__ == "__main__":
    sys.exit(main())
