"""The unit-tests reward on the real sandbox: pass, fail, infinite loop, memory bomb, the
in-sandbox guard's refusals, and how outcomes become scores and metrics. The OS boundary
itself is attacked in tests/security/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from lightrft.adapters.rewards.unit_tests import UnitTestsReward, extract_code
from lightrft.adapters.sandbox import CHOICES, ProcessSandbox, open_sandbox
from lightrft.domain.ports import CodeSandbox
from lightrft.domain.sandbox import SandboxLimits, SandboxResult
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config.reward_model_configs import UnitTestsRewardConfig

TESTS = "assert square(3) == 9\nassert square(-2) == 4\n"


def sample(response: str, tests: str | None = TESTS) -> RewardSample:
    return RewardSample(
        PromptRecord("p", "write square", (1,), reference=tests),
        Completion(0, (2,), response, "stop"),
    )


@pytest.fixture(scope="module")
def sandbox() -> ProcessSandbox:
    return open_sandbox()


@pytest.fixture(scope="module")
def reward(sandbox: ProcessSandbox) -> Iterator[UnitTestsReward]:
    source = UnitTestsReward(sandbox, timeout_s=2.0, memory_mb=256)
    yield source
    source.close()


class BrokenSandbox:
    """A sandbox that never starts a program (records what it was asked to run)."""

    backend = "broken"

    def __init__(self) -> None:
        self.programs: list[str] = []

    def run(
        self, program: str, stdin: str = "", limits: SandboxLimits | None = None
    ) -> SandboxResult:
        self.programs.append(program)
        return SandboxResult("sandbox_error", None, "", "bwrap: cannot mount", 0.0)


def test_extract_code() -> None:
    assert (
        extract_code("Here:\n```python\ndef f():\n    return 1\n```\nDone")
        == "def f():\n    return 1\n"
    )
    assert extract_code("```\nx = 1\n```\n```py\nx = 2\n```") == "x = 2\n"  # the last block
    assert extract_code("def f(): pass") == "def f(): pass"


def test_pass_fail_and_metrics(reward: UnitTestsReward) -> None:
    good = "```python\ndef square(x):\n    return x * x\n```"
    bad = "```python\ndef square(x):\n    return 2 * x\n```"  # square(3) == 6
    broken = "def square(x) return x"
    result = reward.score([sample(good), sample(bad), sample(broken), sample(good, tests=None)])
    assert result.scores.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert float(result.metrics["pass_rate"]) == 0.25
    assert float(result.metrics["failed"]) == 0.5
    assert float(result.metrics["no_tests"]) == 0.25
    assert float(result.metrics["sandbox_error"]) == 0.0


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        ("while True:\n    pass\n", "timeout"),
        ("import time\ntime.sleep(100)\n", "timeout"),
        ("x = bytearray(2 * 1024**3)\n", "memory"),
        ("import os\nos.system('echo hacked > /tmp/lightrft-hacked')\n", "blocked"),
        ("import subprocess\nsubprocess.run(['ls'])\n", "blocked"),
        ("import socket\nsocket.create_connection(('127.0.0.1', 9))\n", "blocked"),
        ("import ctypes\n", "blocked"),
        ("open('/etc/passwd').read()\n", "blocked"),
        ("open('/outside.txt', 'w').write('x')\n", "blocked"),
        ("open('inside.txt', 'w').write('x')\nassert open('inside.txt').read() == 'x'\n", "passed"),
    ],
)
def test_sandbox_outcomes(sandbox: ProcessSandbox, code: str, outcome: str) -> None:
    assert sandbox.run(code, limits=SandboxLimits(wall_s=1.0, memory_mb=256)).outcome == outcome


def test_reading_a_file_outside_the_sandbox(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer")
    result = sandbox.run(f"print(open({str(secret)!r}).read())\n")
    # /tmp of the sandbox is its own (the guard allows it): the host's file is not there
    assert result.outcome == "failed" and "FileNotFoundError" in result.stderr
    assert "the answer" not in result.stdout


def test_hostile_responses_score_zero_and_are_counted(reward: UnitTestsReward) -> None:
    loop = "def square(x):\n    while True: pass\n"
    bomb = "def square(x):\n    return len(bytearray(4 * 1024**3))\n"
    shell = "import os\nos.system('rm -rf ~')\ndef square(x):\n    return x * x\n"
    result = reward.score([sample(loop), sample(bomb), sample(shell)])
    assert result.scores.tolist() == [0.0, 0.0, 0.0]
    assert float(result.metrics["timeout"]) == pytest.approx(1 / 3)
    assert float(result.metrics["memory"]) == pytest.approx(1 / 3)
    assert float(result.metrics["blocked"]) == pytest.approx(1 / 3)


def test_a_sandbox_failure_scores_fail_and_is_counted_apart() -> None:
    broken = BrokenSandbox()
    assert isinstance(broken, CodeSandbox)
    reward = UnitTestsReward(broken, pass_score=1.0, fail_score=-1.0)
    result = reward.score([sample("def square(x):\n    return x * x\n"), sample("x", tests=None)])
    assert result.scores.tolist() == [-1.0, -1.0]
    assert (
        float(result.metrics["sandbox_error"]) == 0.5 and float(result.metrics["no_tests"]) == 0.5
    )
    assert broken.programs == ["def square(x):\n    return x * x\n\n\n" + TESTS + "\n"]


def test_config_choices_are_the_sandbox_backends() -> None:
    field = UnitTestsRewardConfig.model_fields["sandbox"]
    assert set(get_args(field.annotation)) == set(CHOICES)
    assert field.default == "auto"
