"""The split placement: the cycle's batches come from an engine elsewhere (another process,
other devices), driven by a producer thread (:mod:`rollout_producer`), while the trainer
trains. The cycle's own ``engine`` stays for evaluation.

One rank only: the producer's collection would otherwise run collectives (dynamic sampling
counts groups over ranks) concurrently with the trainer's. The producer scores its batches,
so the reward models stay awake in every phase of the trainer's plan (they are not
time-sliced against the trainer any more). With ``partial_rollouts`` the producer's engine
is a :class:`~lightrft.application.partial_generation.ChunkedEngine` that loads newer
weights between chunks (``async/mid_generation_weight_loads`` counts them per batch).
"""

from __future__ import annotations

from collections.abc import Callable

from lightrft.application.cycle import RLCycle, experience_maker
from lightrft.application.experience_maker import CollectedRollout
from lightrft.application.partial_generation import ChunkedEngine
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.rollout_producer import ProducerPorts, Snapshot, ThreadedRolloutFeed
from lightrft.domain.ports import RolloutEngine


def split_feed(engine: RolloutEngine) -> Callable[[RLCycle], ThreadedRolloutFeed]:
    """The ``feed`` argument of :class:`RLCycle` for an engine placed elsewhere."""

    def build(cycle: RLCycle) -> ThreadedRolloutFeed:
        c, s = cycle.components, cycle.settings
        if c.collective.world_size > 1:
            raise ValueError(
                "off_policy.placement=split runs one rank (the producer's collection would "
                f"run collectives beside the trainer's); this run has {c.collective.world_size}"
            )
        # the producer scores while the trainer trains: reward models never go to sleep
        cycle.phases.plan = {
            phase: names | {"reward_models"} for phase, names in cycle.phases.plan.items()
        }
        cycle.phases.switches["reward_models"].on()
        producer_phases = PhaseSwitcher({})  # nothing to switch: the engine is elsewhere

        def collect(step: int) -> CollectedRollout:
            loads_before = chunked.weight_loads if chunked is not None else 0
            collected = cycle.collect_batch(step, maker)
            spent = producer_phases.take_metrics()
            collected.metrics["async/producer_generate_s"] = spent.get("time/rollout_s", 0.0)
            if chunked is not None:
                loads = chunked.weight_loads - loads_before
                collected.metrics["async/mid_generation_weight_loads"] = float(loads)
            return collected

        def snapshot() -> Snapshot:
            with cycle.phases.phase(Phase.WEIGHT_SYNC):
                weights = c.policy.weights_for_sync(c.policy_strategy.full_state())
                return [(name, tensor.detach().clone()) for name, tensor in weights]

        off = s.off_policy
        feed = ThreadedRolloutFeed(
            ProducerPorts(engine, collect, snapshot), off, s.cycle.total_steps - 1
        )
        chunked = (
            ChunkedEngine(engine, off.partial_chunk_tokens, feed.load_newest_weights)
            if off.partial_rollouts
            else None
        )
        maker = experience_maker(
            c, s, producer_phases, engine=engine if chunked is None else chunked
        )
        return feed

    return build
