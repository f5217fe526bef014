"""The colocation protocol, micro-batch invariance, resume and the failure paths."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
import structlog
import torch
from structlog.testing import capture_logs

from lightrft.adapters.fakes import InMemoryCheckpointStore, SimulatedCrash
from lightrft.adapters.fakes.batches import completions_batch
from lightrft.application.params import AlgorithmParams
from lightrft.domain.types import SamplingParams
from tests.helpers.fake_cycle import build_rig


def _params(rig) -> dict[str, torch.Tensor]:  # type: ignore[no-untyped-def]
    return {k: v.detach().clone() for k, v in rig.policy.module.named_parameters()}


def test_phases_keep_each_component_awake_only_when_needed() -> None:
    rig = build_rig("reinforce_pp", total_steps=3, model_reward_weight=0.5, eval_every=3)
    seen: list[tuple[bool, bool, bool]] = []
    generate = rig.engine.generate

    def spying_generate(prompts, sampling):  # type: ignore[no-untyped-def]
        # while generating: training state offloaded, reward model and reference asleep
        seen.append(
            (
                rig.strategy.is_offloaded,
                rig.model_reward.is_loaded,
                rig.reference is not None and rig.reference.is_loaded,
            )
        )
        return generate(prompts, sampling)

    score = rig.model_reward.score

    def spying_score(samples):  # type: ignore[no-untyped-def]
        assert not rig.engine.is_awake, "engine awake while rewards are scored"
        return score(samples)

    rig.engine.generate = spying_generate  # type: ignore[method-assign]
    rig.model_reward.score = spying_score  # type: ignore[method-assign]
    rig.cycle.run()
    assert seen and all(s == (True, False, False) for s in seen)
    # the model reward was onloaded only for scoring: once per train step and per evaluation
    assert rig.model_reward.onloads == rig.model_reward.score_calls == 3 + 2
    assert not rig.model_reward.is_loaded  # offloaded again after the last scoring
    assert rig.engine.sleeps >= 3 and rig.engine.wake_ups >= 3


def test_weights_sync_once_per_policy_update_and_engine_matches_policy() -> None:
    rig = build_rig("grpo", total_steps=4)
    rig.cycle.run()
    # one sync before the first rollout, then one after each update that precedes a rollout
    assert rig.engine.weight_syncs == 1 + 3
    rig.cycle.evaluate()  # the 4th update reaches the engine only when it is used again
    assert rig.engine.weight_syncs == 1 + 4
    rig.cycle.evaluate()
    assert rig.engine.weight_syncs == 1 + 4  # unchanged policy: no sync
    prompts = [rig.cycle.components.prompts[i] for i in range(4)]
    rig.cycle.phases._switch_to("eval")
    completions = rig.engine.generate(prompts, SamplingParams(n=2, max_new_tokens=4, seed=3))
    batch = completions_batch(prompts, completions)
    with torch.no_grad():
        logprobs = rig.policy.forward(batch).logprobs
    expected = torch.zeros_like(logprobs)
    for i, c in enumerate(completions):
        expected[i, : len(c.token_ids)] = torch.tensor(c.logprobs)
    torch.testing.assert_close(logprobs, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("algorithm", ["grpo", "gspo", "dr_grpo", "gae"])
def test_micro_batch_size_does_not_change_the_update(algorithm: str) -> None:
    results = []
    for micro in (1, 2, 4):
        rig = build_rig(
            algorithm, total_steps=2, micro_batch_size=micro, epochs=2, mini_batch_size=16
        )
        rig.cycle.run()
        results.append(_params(rig))
    for other in results[1:]:
        for name, value in results[0].items():
            # Adam divides by sqrt(v): float error of tiny gradients is amplified a little
            torch.testing.assert_close(other[name], value, atol=3e-5, rtol=1e-4)


def _comparable(metrics: dict[str, float]) -> dict[str, float]:
    return {
        k: v for k, v in metrics.items() if not k.startswith(("time/", "throughput/", "memory/"))
    }


def test_resume_is_bitwise_identical_to_an_uninterrupted_run() -> None:
    full = build_rig("grpo", total_steps=6, checkpoint_every=2)
    full.cycle.run()
    store = InMemoryCheckpointStore()
    first = build_rig("grpo", total_steps=6, checkpoint_every=2, checkpoints=store)
    first.cycle.run(max_steps=3)  # checkpoints at steps 2 (and 3 is lost: not a multiple)
    assert store.latest_step() == 2
    resumed = build_rig("grpo", total_steps=6, checkpoint_every=2, checkpoints=store)
    resumed.cycle.run()
    for name, value in _params(full).items():
        assert torch.equal(_params(resumed)[name], value), name
    full_metrics = {s: _comparable(m) for s, m in full.tracker.metrics}
    resumed_metrics = {s: _comparable(m) for s, m in resumed.tracker.metrics}
    for step in (3, 4, 5, 6):
        assert resumed_metrics[step] == full_metrics[step], step


def test_crash_while_checkpointing_leaves_the_previous_checkpoint_loadable() -> None:
    store = InMemoryCheckpointStore()
    rig = build_rig("grpo", total_steps=6, checkpoint_every=2, checkpoints=store)
    rig.cycle.run(max_steps=2)
    store.fail_next_save = True
    with pytest.raises(SimulatedCrash):
        rig.cycle.run(max_steps=2)
    assert store.latest_step() == 2
    again = build_rig("grpo", total_steps=6, checkpoint_every=2, checkpoints=store)
    assert again.cycle.resume()
    assert again.cycle.state.step == 2


def test_dynamic_sampling_with_only_uninformative_groups_stops_at_the_round_limit() -> None:
    rig = build_rig("dapo", total_steps=1, max_sampling_rounds=3)
    rig.rule.score = lambda samples: replace(  # type: ignore[method-assign]
        type(rig.rule).score(rig.rule, samples), scores=torch.zeros(len(samples))
    )
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    with capture_logs() as logs:
        history = rig.cycle.run()
    assert history[0]["dynamic_sampling/rounds"] == 3
    assert history[0]["dynamic_sampling/hit_round_limit"] == 1.0
    assert history[0]["dynamic_sampling/kept_groups"] == 0
    assert rig.engine.generate_calls == 3
    assert any(
        e["event"] == "dynamic_sampling.round_limit" and e["log_level"] == "warning" for e in logs
    )


def test_non_finite_loss_skips_the_step_with_a_logged_reason() -> None:
    rig = build_rig("grpo", total_steps=1)
    before = _params(rig)
    forward = rig.policy.forward

    def poisoned(batch, **kwargs):  # type: ignore[no-untyped-def]
        out = forward(batch, **kwargs)
        return out._replace(logprobs=out.logprobs * float("nan"))

    rig.cycle.optimizer.policy = type("P", (), {"forward": staticmethod(poisoned)})()  # type: ignore[assignment]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    with capture_logs() as logs:
        history = rig.cycle.run()
    assert history[0]["train/skipped_steps"] == 1.0
    assert any(e["event"] == "train.step_skipped" and "non-finite" in e["reason"] for e in logs)
    for name, value in before.items():
        assert torch.equal(_params(rig)[name], value)
    assert rig.cycle.policy_version == 0  # no update: the engine is not re-synced


def test_bad_wiring_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a reference model"):
        build_rig(AlgorithmParams(kl_coef=0.1), with_reference=False)


def test_on_policy_shortcut_skips_the_old_logprob_pass_without_changing_the_update() -> None:
    # one epoch, one optimizer step: old log-probs equal the current ones, so the cycle
    # skips their forward pass; a single mini-batch of the full size recomputes them.
    shortcut = build_rig("grpo", total_steps=2)
    recomputed = build_rig("grpo", total_steps=2, mini_batch_size=32)  # 8 prompts x 4 = 32
    shortcut.cycle.run()
    recomputed.cycle.run()
    for name, value in _params(recomputed).items():
        torch.testing.assert_close(_params(shortcut)[name], value, atol=1e-6, rtol=1e-5)
    assert shortcut.policy.forward_calls < recomputed.policy.forward_calls
