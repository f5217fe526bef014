"""``--resume-changing KEY ...`` on the commands that resume, and ``rm train``'s start flags."""

from __future__ import annotations

import argparse

import pytest

from lightrft.entrypoints.commands import rm
from lightrft.entrypoints.commands.resume_flags import add_resume_changing, with_stated_keys
from lightrft.entrypoints.config import load_config


def test_keys_become_the_config_setting_and_resume_is_not_read_as_an_abbreviation() -> None:
    parser = argparse.ArgumentParser()
    add_resume_changing(parser)
    argv = ["--resume", "--resume-changing", "optim.lr", "model.path=/m", "rollout.temperature"]
    args, rest = parser.parse_known_args(argv)
    assert rest == ["--resume"]  # left to the overrides, not taken for --resume-changing
    overrides = with_stated_keys(args, rest)
    assert overrides == [
        "--resume",
        "model.path=/m",  # argparse gave it to the flag; it goes back to the overrides
        "checkpoint.resume_changing=[optim.lr, rollout.temperature]",
    ]
    config = load_config(None, overrides, algorithm="grpo")
    assert config.checkpoint.resume is True and config.model.path == "/m"
    assert config.checkpoint.resume_changing == ["optim.lr", "rollout.temperature"]


@pytest.mark.parametrize(
    ("flags", "resume", "overwrite"),
    [
        ([], False, False),
        (["--resume"], True, False),
        (["--resume=auto"], "auto", False),
        (["--overwrite"], False, True),
        (["--no-resume"], False, False),
    ],
)
def test_rm_train_starts_fresh_unless_told(
    flags: list[str], resume: bool | str, overwrite: bool
) -> None:
    parser = argparse.ArgumentParser()
    rm.add_parser(parser)
    args = parser.parse_args(["train", "--output", "o", *flags, "--resume-changing", "lr"])
    assert (args.resume, args.overwrite, args.resume_changing) == (resume, overwrite, ["lr"])


def test_rm_train_refuses_resume_with_overwrite(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    rm.add_parser(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--output", "o", "--resume", "--overwrite"])
    assert "not allowed with argument" in capsys.readouterr().err
