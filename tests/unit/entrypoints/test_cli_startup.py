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


_CONFIG_ERRORS = """
import contextlib, io, json, sys
from lightrft.entrypoints.cli import main
answers = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    answers.append([status, err.getvalue()])
print(json.dumps({"answers": answers, "torch": [m for m in sys.modules if m.split(".")[0] == "torch"]}))
"""


def test_config_errors_answer_without_importing_torch() -> None:
    """Issue 46, item 8: a bad key, a bad value or an unknown registered name is refused
    with its one line before anything imports torch (the registries a config names list
    their built-in names; the implementations load on first use)."""
    import json

    cases = {
        ("train", "grpo", "algorithm.policy_loss=nope"): "  algorithm.policy_loss: Input should "
        "be 'ppo', 'dapo', 'gspo', 'gspo_token', 'gmpo', 'cpgd' or 'reinforce' (got 'nope')",
        ("train", "grpo", "algorithm.advantage_estimator=grpoo"): "'grpo', 'group_norm', "
        "'dr_grpo', 'rloo', 'opo', 'cpgd', 'reinforce_pp_baseline', 'reinforce_baseline', "
        "'remax', 'reinforce_pp', 'reinforce', 'gae', 'opd' or 'process_grpo' (got 'grpoo')",
        ("train", "grpo", "algorithm.kl_estimator=k9"): "Input should be 'k1', 'k2' or 'k3'",
        ("train", "dapo", "model.colour=red"): "  model.colour: unknown key",
        ("train", "grpo", "optim.lr=-1"): "  optim.lr: Input should be greater than 0 (got -1)",
        ("config", "show", "grpo", "train.total_steps=many"): "  train.total_steps: Input "
        "should be a valid integer",
    }
    done = subprocess.run(
        [sys.executable, "-c", _CONFIG_ERRORS, json.dumps([list(argv) for argv in cases])],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["torch"] == [], "a config error imported torch"
    for (status, stderr), expected in zip(seen["answers"], cases.values(), strict=True):
        assert status == 2 and stderr.startswith("lightrft: invalid configuration:\n"), stderr
        assert expected in stderr and "Traceback" not in stderr
