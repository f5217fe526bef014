"""A killed split engine ends the CLI in one `lightrft: error:` line naming the process and
the call, like a stopped one (EC AS02: four chained tracebacks)."""

from __future__ import annotations

import argparse
import os
import signal
import types
from functools import partial

import pytest

from lightrft.adapters.engine_process import EngineProcessDiedError, ProcessRolloutEngine
from lightrft.adapters.fakes import FakeRolloutEngine, synthetic_prompts
from lightrft.domain.async_errors import ProducerDiedError
from lightrft.domain.registry import Registry
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints import cli


def _command(error: BaseException) -> types.ModuleType:
    module = types.ModuleType("fake_verb")
    module.NAME, module.HELP = "fake", "raises the error of a dead engine"  # type: ignore[attr-defined]
    module.add_parser = lambda parser: None  # type: ignore[attr-defined]

    def run(args: argparse.Namespace, rest: list[str]) -> int:
        raise ProducerDiedError(
            f"the rollout producer stopped while producing the batch of step 9: {error!r}"
        ) from error

    module.run = run  # type: ignore[attr-defined]
    return module


@pytest.mark.slow
def test_a_killed_engine_process_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = ProcessRolloutEngine(partial(FakeRolloutEngine, seed=1))
    pid = engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    try:
        with pytest.raises(EngineProcessDiedError) as died:
            engine.generate(synthetic_prompts(1, seed=0), SamplingParams(max_new_tokens=2))
    finally:
        engine.close(timeout_s=1.0)
    commands: Registry[types.ModuleType] = Registry("command")
    commands.add("fake", _command(died.value))
    monkeypatch.setattr(cli, "load_commands", lambda: commands)
    monkeypatch.delenv("LIGHTRFT_DEBUG", raising=False)
    assert cli.main(["fake"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("lightrft: error: the rollout producer stopped")
    assert f"the engine process (pid {pid}) exited with code -9 during generate()" in err[0]
    assert len(err) == 2 and "Traceback" not in "\n".join(err)  # the line and the --debug hint
