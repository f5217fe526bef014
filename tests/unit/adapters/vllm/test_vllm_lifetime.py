"""Several in-process vLLM engines: vLLM's teardown (which destroys the process groups every
engine of the process shares) runs only when the last open engine closes (no vLLM needed)."""

from __future__ import annotations

from types import SimpleNamespace

from lightrft.adapters.vllm import lifetime


def fake_llm(name: str, shutdowns: list[str]) -> SimpleNamespace:
    core = SimpleNamespace(shutdown=lambda: shutdowns.append(name))
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=core))


def test_teardown_waits_for_the_last_open_engine() -> None:
    shutdowns: list[str] = []
    before = lifetime.open_engines()
    rollout, judge, rm = (
        lifetime.track(fake_llm(n, shutdowns)) for n in ("rollout", "judge", "rm")
    )
    assert lifetime.open_engines() == before + 3
    assert lifetime.shut_down(judge) is False and shutdowns == []  # rollout and rm still run
    assert lifetime.shut_down(rm) is False and shutdowns == []
    assert lifetime.shut_down(rollout) is (before == 0)
    if before == 0:  # no engine of another test still open: all three torn down, in order
        assert shutdowns == ["judge", "rm", "rollout"]
    assert lifetime.open_engines() == before
