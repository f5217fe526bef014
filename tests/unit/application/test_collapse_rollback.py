"""CollapseGuard: ranks agree on the best state, the kept copy survives restores, limits."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from structlog.testing import capture_logs
from torch import Tensor, nn

from lightrft.adapters.fakes import FakeCollective, FakeStrategy
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.collapse_rollback import CollapseGuard
from lightrft.application.params import HealthParams, RollbackChanges
from lightrft.application.phases import PhaseSwitcher, Switch
from lightrft.domain.ports import Collective, Strategy
from lightrft.domain.training_health import HealthSignal
from lightrft.domain.types import OptimizerParams
from tests.helpers.simulated_ranks import ThreadCollective, run_on_ranks

COLLAPSE = HealthSignal("reward_drop", 0, 0.5, 0.25, True, "reward_drop at step 0")
OPTIM = OptimizerParams(lr=0.1)
WARNING_ONLY = HealthSignal("kl_blowup", 0, 0.9, 0.5, False, "kl_blowup at step 0")


def _guard(
    collective: Collective | None = None,
    on_collapse: str = "rollback",
    strategy: Strategy | None = None,
) -> tuple[CollapseGuard, Strategy, nn.Module]:
    module = nn.Linear(3, 2)
    strategy = strategy or FakeStrategy(OPTIM)
    strategy.prepare(module)
    phases = PhaseSwitcher({"policy": Switch(on=strategy.onload, off=strategy.offload)})
    health = HealthParams(on_collapse=on_collapse)  # type: ignore[arg-type]
    guard = CollapseGuard(health, [strategy], collective or FakeCollective(), phases, by_eval=False)
    return guard, strategy, module


def _loss(module: nn.Module) -> Tensor:
    inputs = torch.ones(1, 3, device=next(module.parameters()).device)
    return module(inputs).pow(2).sum()


def _train(strategy: Strategy, module: nn.Module) -> None:
    strategy.backward(_loss(module))
    strategy.step()


def _lr(strategy: Strategy, module: nn.Module) -> float:
    """The learning rate of one more optimizer step (it is taken)."""
    strategy.backward(_loss(module))
    return strategy.step().lr


def _weights(module: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _same(a: dict[str, Tensor], b: dict[str, Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_ranks_rank_by_the_mean_reward_and_keep_the_same_step() -> None:
    # rank-local best steps differ (rank 0: step 1, rank 1: step 2); the means are 0.5, 0.4
    rewards = {0: [1.0, 0.0], 1: [0.0, 0.8]}

    def rank(r: int) -> Callable[[Callable[[Tensor], Tensor]], int | None]:
        def run(reduce: Callable[[Tensor], Tensor]) -> int | None:
            guard, strategy, module = _guard(ThreadCollective(r, 2, reduce))
            for step, reward in enumerate(rewards[r], 1):
                guard.offer(step, {"reward/mean": reward}, evaluated=False)
                _train(strategy, module)
            return guard.best_step

        return run

    assert run_on_ranks([rank(0), rank(1)]) == [1, 1]


def _optimizer_state(strategy: Strategy) -> list[Tensor]:
    state = strategy.state_dict()["optimizer"]["state"]
    return [t for s in state.values() for t in s.values() if isinstance(t, Tensor)]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: FakeStrategy(OPTIM), id="fake"),
        pytest.param(lambda: SingleDeviceStrategy(torch.device("cpu"), OPTIM), id="single"),
        pytest.param(  # the kept copy lives in host memory, the state on the GPU
            lambda: SingleDeviceStrategy(torch.device("cuda", 0), OPTIM),
            id="single-cuda",
            marks=pytest.mark.gpu,
        ),
    ],
)
def test_each_rollback_restores_the_kept_state_and_lowers_the_lr_further(
    make: Callable[[], Strategy],
) -> None:
    guard, strategy, module = _guard(strategy=make())
    _train(strategy, module)  # some optimizer state to keep
    guard.offer(1, {"reward/mean": 0.9}, evaluated=False)
    best, best_moments = _weights(module), _optimizer_state(strategy)
    guard.offer(1, {"eval/accuracy": 1.0}, evaluated=True)  # ranks by training reward only
    for step in (2, 3):
        _train(strategy, module)
        guard.offer(step, {"reward/mean": 0.1}, evaluated=False)  # not better: not kept
    assert guard.best_step == 1 and not _same(_weights(module), best)
    assert guard.respond(3, [WARNING_ONLY]).restored is False  # not a collapse signal
    assert guard.respond(3, [COLLAPSE]).restored
    assert _same(_weights(module), best) and _lr(strategy, module) == pytest.approx(0.05)
    # that step trained on the restored state in place: the kept copy must not have moved
    assert guard.respond(5, [COLLAPSE]).restored
    assert _same(_weights(module), best)
    assert all(map(torch.equal, _optimizer_state(strategy), best_moments))
    assert _lr(strategy, module) == pytest.approx(0.1 * 0.25)
    with capture_logs() as logs:
        assert guard.respond(6, [COLLAPSE]).restored is False  # max_rollbacks=2 reached
    assert logs[0]["event"] == "health.rollback_skipped"
    assert [e["lr_scale"] for e in guard.summary()["rollbacks"]] == [0.5, 0.25]
    assert guard.metrics() == {"health/rollbacks": 2.0}


def test_nothing_to_restore_before_a_best_state_is_known() -> None:
    guard, strategy, module = _guard()
    with capture_logs() as logs:
        assert guard.respond(1, [COLLAPSE]).restored is False
    assert "no best state yet" in str(logs[0]["reason"]) and _lr(strategy, module) == 0.1


def test_warn_and_stop_keep_no_state() -> None:
    for action in ("warn", "stop"):
        guard, _, _ = _guard(on_collapse=action)
        guard.offer(1, {"reward/mean": 1.0}, evaluated=False)
        assert guard.best_states is None and guard.metrics() == {}
        assert guard.respond(1, [COLLAPSE]).stop is (action == "stop")


def test_undone_steps_count_the_updates_each_rollback_takes_back() -> None:
    """Ranked by held-out accuracy, evaluated at steps 0 and 15 (the second run's step 7)."""
    module, strategy = nn.Linear(3, 2), FakeStrategy(OPTIM)
    strategy.prepare(module)
    phases = PhaseSwitcher({"policy": Switch(on=strategy.onload, off=strategy.offload)})
    health = HealthParams(on_collapse="rollback", rollback=RollbackChanges(redo_steps=True))
    guard = CollapseGuard(health, [strategy], FakeCollective(), phases, by_eval=True)
    guard.offer(0, {"eval/accuracy": 0.16}, evaluated=True)  # the initial weights
    for _ in range(8):
        _train(strategy, module)
    assert guard.respond(8, [COLLAPSE]).restored  # back to the start: 8 updates undone
    assert (guard.undone_steps, guard.redone_steps) == (8, 8)
    for _ in range(9, 16):
        _train(strategy, module)
    guard.offer(15, {"eval/accuracy": 0.43}, evaluated=True)  # holds steps 9-15's updates
    _train(strategy, module)
    assert guard.respond(16, [COLLAPSE]).restored  # back to step 15: step 16's update undone
    assert [e["undone_steps"] for e in guard.summary()["rollbacks"]] == [8, 1]
    assert guard.redone_steps == 9
    resumed = CollapseGuard(health, [strategy], FakeCollective(), phases, by_eval=True)
    resumed.load_state_dict(guard.state_dict())
    assert (resumed.best_updates, resumed.redone_steps) == (7, 9)
    no_redo = CollapseGuard(
        HealthParams(on_collapse="rollback"), [strategy], FakeCollective(), phases, by_eval=True
    )
    no_redo.load_state_dict(guard.state_dict())
    assert (no_redo.undone_steps, no_redo.redone_steps) == (9, 0)
