"""The CLI answers ``--help`` without importing torch (issue 46, item 8: `lightrft --help`
took 13-19 s on a busy machine because the CLI imported torch before parsing)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lightrft.entrypoints.user_errors import is_input_error, is_user_error

_PROBE = """
import contextlib, io, sys
import lightrft.entrypoints.cli as cli
parser = cli._parser(cli.load_commands())
for argv in (["--help"], *([name, "--help"] for name in cli.load_commands().names())):
    if argv[0] == "demo":
        continue  # its help is the named recipe's, built in run()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        parser.parse_known_args(argv)
print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
"""


def test_the_parser_and_every_verbs_help_import_no_torch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_an_error_class_whose_module_is_loaded_is_classified() -> None:
    from lightrft.domain.async_errors import ProducerDiedError
    from lightrft.entrypoints.config.loading import ConfigError

    assert is_input_error(ConfigError("x")) and is_user_error(ConfigError("x"))
    assert is_user_error(ProducerDiedError("x")) and not is_input_error(ProducerDiedError("x"))
    assert not is_user_error(RuntimeError("a bug keeps its traceback"))


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"]])
def test_help_answers_through_the_console_entry(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lightrft.entrypoints.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "usage: lightrft" in done.stdout
