"""``EngineWrapper``: the :class:`~lightrft.domain.ports.RolloutEngine` port's weight and
sleep calls passed through to an inner engine, for services that change only how
``generate`` drives it (multi-turn episodes, chunked partial rollouts)."""

from __future__ import annotations

from lightrft.domain.ports import NamedTensors, RolloutEngine


class EngineWrapper:
    """Delegates everything but ``generate`` to ``self.engine``."""

    engine: RolloutEngine

    def load_weights(self, weights: NamedTensors) -> None:
        """Loads ``weights`` into the inner engine."""
        self.engine.load_weights(weights)

    def sleep(self) -> None:
        """Puts the inner engine to sleep."""
        self.engine.sleep()

    def wake_up(self) -> None:
        """Wakes the inner engine."""
        self.engine.wake_up()

    @property
    def is_awake(self) -> bool:
        """Whether the inner engine may generate."""
        return self.engine.is_awake

    @property
    def shares_policy_weights(self) -> bool:
        """Whether the inner engine runs the policy's own module."""
        return self.engine.shares_policy_weights
