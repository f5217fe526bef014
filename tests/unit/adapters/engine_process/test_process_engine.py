"""ProcessRolloutEngine: the engine in its own process (split placement on one CPU)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import partial

import pytest
import torch

from lightrft.adapters.engine_process import EngineProcessDiedError, ProcessRolloutEngine
from lightrft.adapters.fakes import FakeRolloutEngine, synthetic_prompts
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.partial_generation import ChunkedEngine
from lightrft.application.rollout_producer import ThreadedRolloutFeed
from lightrft.application.split_placement import split_feed
from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.off_policy_rig import (
    FailingEngine,
    comparable,
    off_policy_rig,
    policy_weights,
    run_recording_versions,
)


class SlowEngine(FakeRolloutEngine):
    """Takes ``delay_s`` per ``generate`` (built in the child process)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(seed=1)
        self.delay_s = delay_s

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        time.sleep(self.delay_s)
        return super().generate(prompts, sampling)


class EnvironEngine(FakeRolloutEngine):
    """Answers with the values of ``names`` in its process's environment (``-``: unset)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__(seed=1)
        self.names = names

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        text = ",".join(os.environ.get(name, "-") for name in self.names)
        return [replace(c, text=text) for c in super().generate(prompts, sampling)]


def _broken_factory() -> FakeRolloutEngine:
    raise ValueError("no such model")


@pytest.fixture(scope="module")
def engine() -> Iterator[ProcessRolloutEngine]:
    started = ProcessRolloutEngine(partial(FakeRolloutEngine, seed=1))
    yield started
    started.close()


def test_the_engine_runs_in_another_process_and_matches_the_in_process_one(
    engine: ProcessRolloutEngine,
) -> None:
    assert engine.pid is not None and engine.pid != os.getpid()
    local = FakeRolloutEngine(seed=3)
    weights = [(n, t + 0.01) for n, t in local.named_parameters().items()]
    engine.load_weights(weights)
    local.load_weights(weights)
    names = [n for n, _ in weights]
    assert engine.weights_checksum(names) == local.weights_checksum(names)
    prompts, sampling = synthetic_prompts(3, seed=0), SamplingParams(n=2, max_new_tokens=4, seed=5)
    assert engine.generate(prompts, sampling) == local.generate(prompts, sampling)
    assert engine.weights_dtype == torch.float32 and not engine.shares_policy_weights


def test_chunks_in_the_child_equal_one_generate(engine: ProcessRolloutEngine) -> None:
    assert engine.can_resume  # the fake in the child keeps its generation between chunks
    prompts, sampling = synthetic_prompts(3, seed=1), SamplingParams(n=2, max_new_tokens=6, seed=2)
    chunked = ChunkedEngine(engine, 2, refresh=lambda: 0).generate(prompts, sampling)
    assert [replace(c, token_versions=None) for c in chunked] == engine.generate(prompts, sampling)


def test_the_env_is_set_in_the_child_before_its_engine_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_RANK", "5")  # inherited by the child, then replaced there
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    names = ("CUDA_VISIBLE_DEVICES", "LOCAL_RANK", "HOME")
    child = ProcessRolloutEngine(
        partial(EnvironEngine, names), env={"CUDA_VISIBLE_DEVICES": "3", "LOCAL_RANK": "0"}
    )
    try:
        completions = child.generate(synthetic_prompts(2, seed=0), SamplingParams(n=1))
    finally:
        child.close()
    assert {c.text for c in completions} == {f"3,0,{os.environ['HOME']}"}
    assert os.environ["LOCAL_RANK"] == "5" and "CUDA_VISIBLE_DEVICES" not in os.environ


# the split feed closes its engine at the end: this test is the fixture's last user
def test_split_process_placement_at_staleness_zero_equals_the_synchronous_cycle(
    engine: ProcessRolloutEngine,
) -> None:
    sync, split = off_policy_rig(), off_policy_rig("async", 0, feed=split_feed(engine))
    assert run_recording_versions(sync) == run_recording_versions(split)
    assert comparable(sync.cycle.history) == comparable(split.cycle.history)
    for name, tensor in policy_weights(sync).items():
        assert torch.equal(tensor, policy_weights(split)[name]), name


@pytest.mark.slow
def test_a_killed_engine_process_stops_the_run_with_a_checkpoint() -> None:
    engine = ProcessRolloutEngine(partial(FakeRolloutEngine, seed=1))
    rig = off_policy_rig("async", 0, feed=split_feed(engine))
    pid = engine.pid
    assert pid is not None

    def kill_after_first_step() -> bool:
        os.kill(pid, signal.SIGKILL)
        return False

    with pytest.raises(ProducerDiedError, match="step 1") as caught:
        rig.cycle.run(should_stop=kill_after_first_step)
    assert isinstance(caught.value.__cause__, EngineProcessDiedError)
    assert "exited with code -9" in str(caught.value.__cause__)
    assert rig.checkpoints.steps() == [1]
    engine.close(timeout_s=1.0)


@pytest.mark.slow
def test_a_call_past_its_deadline_names_the_call() -> None:
    slow = ProcessRolloutEngine(partial(SlowEngine, 5.0), call_timeout_s=0.5)
    try:
        with pytest.raises(DeadlineExceededError, match=r"answer generate\(\)"):
            slow.generate(synthetic_prompts(1, seed=0), SamplingParams(max_new_tokens=2))
    finally:
        slow.close(timeout_s=1.0)


@pytest.mark.slow
def test_an_engine_that_cannot_start_says_why() -> None:
    with pytest.raises(RuntimeError, match="no such model"):
        ProcessRolloutEngine(_broken_factory)


@pytest.mark.slow
def test_an_engine_process_stuck_in_a_call_is_killed_when_the_run_ends() -> None:
    engine = ProcessRolloutEngine(
        partial(FailingEngine, at=2, stall_s=120.0)
    )  # batch 1 never comes back
    pid = engine.pid
    off = OffPolicyParams(
        mode="one_step_off", max_staleness=1, placement="split", shutdown_timeout_s=0.5
    )
    rig = off_policy_rig(feed=split_feed(engine), off_policy_params=off)
    started = time.monotonic()
    rig.cycle.run(max_steps=1)  # ends while the producer waits on the stuck child
    assert time.monotonic() - started < 60
    assert isinstance(rig.cycle.feed, ThreadedRolloutFeed) and not rig.cycle.feed.running
    assert not os.path.exists(f"/proc/{pid}")  # killed and reaped
