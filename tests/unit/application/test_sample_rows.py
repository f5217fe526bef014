"""The trajectory rows a cycle logs: per-source rewards, per-token traces, bounded count."""

from __future__ import annotations

from dataclasses import replace

from lightrft.adapters.fakes import InMemoryTracker
from lightrft.adapters.tracking.token_text import TokenTextTracker
from tests.helpers.fake_cycle import build_rig


def test_logged_rows_carry_traces_and_rewards_per_source() -> None:
    rig = build_rig("grpo", total_steps=2, prompts_per_step=4, n=4)
    rig.cycle.run(resume=False)
    steps = {step for step, _ in rig.tracker.samples}
    assert steps == {1, 2}
    rows = [r for step, batch in rig.tracker.samples for r in batch]
    assert len(rows) == 2 * 4  # log_samples_per_step (4) of the 16 samples of each step
    for r in rows:
        n = r["length"]
        assert n == len(r["token_ids"]) == len(r["logprobs"]) == len(r["entropy"])
        assert len(r["advantages"]) == len(r["rollout_logprobs"]) == n
        assert set(r["rewards"]) == {"rule", "model"}
        # weights rule 1.0, model 0.0 and no shaping: the reward is the rule's score
        assert r["reward"] == r["rewards"]["rule"]
        assert r["finish_reason"] in ("stop", "length")
        assert all(e >= 0 for e in r["entropy"])
    # the engine runs the synced policy at temperature 1: its log-probs are the policy's
    first = [r for step, batch in rig.tracker.samples if step == 1 for r in batch]
    gaps = [
        abs(a - b) for r in first for a, b in zip(r["rollout_logprobs"], r["logprobs"], strict=True)
    ]
    assert max(gaps) < 1e-3


def test_no_rows_when_logging_is_off() -> None:
    rig = build_rig("grpo", total_steps=1, prompts_per_step=2, n=2)
    settings = rig.cycle.settings
    rig.cycle.settings = replace(settings, cycle=replace(settings.cycle, log_samples_per_step=0))
    rig.cycle.run(resume=False)
    assert rig.tracker.samples == []


def test_token_text_tracker_adds_token_strings() -> None:
    inner = InMemoryTracker()
    tracker = TokenTextTracker(inner, lambda i: f"<{i}>")
    tracker.log_samples([{"token_ids": [3, 1]}, {"response": "x"}], step=5)
    assert inner.samples == [
        (5, [{"token_ids": [3, 1], "tokens": ["<3>", "<1>"]}, {"response": "x"}])
    ]
