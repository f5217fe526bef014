"""``RolloutEngineBase``: the state every rollout engine reports the same way.

``is_awake`` is True from construction until the engine's ``sleep`` (its ``wake_up`` sets it
again: the engines set ``_awake``); ``shares_policy_weights`` is False, the engine holding
its own copy of the weights, unless an engine that can run the policy's module says so.
"""

from __future__ import annotations


class RolloutEngineBase:
    """Base of HF, vLLM, SGLang and fake rollout engines (see the module docstring)."""

    _awake: bool = True

    @property
    def is_awake(self) -> bool:
        """Whether ``generate`` may be called."""
        return self._awake

    @property
    def shares_policy_weights(self) -> bool:
        """Whether the engine runs the policy's own module (default: it holds a copy)."""
        return False
