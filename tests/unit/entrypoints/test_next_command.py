"""The command a message tells the user to run next: the one typed, resuming."""

from __future__ import annotations

from lightrft.entrypoints.next_command import NextCommand


def test_resume_drops_the_start_mode_of_the_command_and_adds_resume() -> None:
    typed = (
        "train", "grpo", "--run-dir", "runs/a b", "optim.lr=1e-5", "--overwrite",
        "--resume-changing", "optim.lr", "rollout.temperature", "--resume=auto",
        "checkpoint.resume=true", "logging.overwrite=true", "--n_samples_per_prompt", "8",
    )  # fmt: skip
    command = NextCommand(typed)
    assert command.resume() == (
        "lightrft train grpo --run-dir 'runs/a b' optim.lr=1e-5 --n_samples_per_prompt 8 --resume"
    )
    assert command.start_over() == (
        "lightrft train grpo --run-dir 'runs/a b' optim.lr=1e-5 --n_samples_per_prompt 8 "
        "--overwrite"
    )


def test_a_configuration_that_overwrites_is_told_not_to_when_resuming() -> None:
    command = NextCommand(("demo", "train.seed=2"), overwrite_configured=True)
    assert command.resume() == "lightrft demo train.seed=2 logging.overwrite=false --resume"


def test_rm_flags_and_commands_that_start_over_by_themselves() -> None:
    rm = NextCommand(("rm", "train", "--output", "o", "--no-resume", "--resume-changing=lr"))
    assert rm.resume() == "lightrft rm train --output o --resume"
    rerun = NextCommand(("demo", "rlhf", "--run-dir", "d"), reruns_as_typed=True)
    assert rerun.resume() == rerun.start_over() == "lightrft demo rlhf --run-dir d"


def test_without_a_command_line_the_message_says_it_in_words() -> None:
    assert "--resume" in NextCommand().resume() and "--overwrite" in NextCommand().start_over()
