"""The unit-tests reward and its sandbox: pass, fail, infinite loop, memory bomb, processes,
files outside the temporary directory, network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lightrft.adapters.rewards.code_sandbox import run_program
from lightrft.adapters.rewards.unit_tests import UnitTestsReward, extract_code
from lightrft.domain.types import Completion, PromptRecord, RewardSample

TESTS = "assert square(3) == 9\nassert square(-2) == 4\n"


def sample(response: str, tests: str | None = TESTS) -> RewardSample:
    return RewardSample(
        PromptRecord("p", "write square", (1,), reference=tests),
        Completion(0, (2,), response, "stop"),
    )


@pytest.fixture(scope="module")
def reward() -> Iterator[UnitTestsReward]:
    source = UnitTestsReward(timeout_s=2.0, memory_mb=256)
    yield source
    source.close()


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
        ("open('/tmp/lightrft-outside.txt', 'w').write('x')\n", "blocked"),
        ("open('inside.txt', 'w').write('x')\nassert open('inside.txt').read() == 'x'\n", "passed"),
    ],
)
def test_sandbox_outcomes(code: str, outcome: str) -> None:
    assert run_program(code, timeout_s=1.0, memory_mb=256)["outcome"] == outcome


def test_reading_a_file_outside_the_temp_dir(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer")
    result = run_program(f"print(open({str(secret)!r}).read())\n", timeout_s=2.0)
    assert result["outcome"] == "blocked" and "the answer" not in result["stdout"]
    escape = run_program(
        f"import os\nos.chdir({str(tmp_path)!r})\nprint(open('secret.txt').read())\n"
    )
    assert escape["outcome"] == "blocked" and "the answer" not in escape["stdout"]


def test_hostile_responses_score_zero_and_are_counted(reward: UnitTestsReward) -> None:
    loop = "def square(x):\n    while True: pass\n"
    bomb = "def square(x):\n    return len(bytearray(4 * 1024**3))\n"
    shell = "import os\nos.system('rm -rf ~')\ndef square(x):\n    return x * x\n"
    result = reward.score([sample(loop), sample(bomb), sample(shell)])
    assert result.scores.tolist() == [0.0, 0.0, 0.0]
    assert float(result.metrics["timeout"]) == pytest.approx(1 / 3)
    assert float(result.metrics["memory"]) == pytest.approx(1 / 3)
    assert float(result.metrics["blocked"]) == pytest.approx(1 / 3)
