"""Typed errors of off-policy (asynchronous) rollouts: every wait has a deadline, and what
ends a wait names what it waited for.

Raised by the application's rollout feeds and by adapters that run an engine elsewhere (in
another process, on other devices); the training cycle checkpoints and stops on them.
"""

from __future__ import annotations


class DeadlineExceededError(TimeoutError):
    """A wait ran past its deadline. ``waited_for`` says what (a queue item of step k, a
    weight transfer of version v, an engine reply ...) and ``seconds`` how long."""

    def __init__(self, waited_for: str, seconds: float) -> None:
        super().__init__(f"waited {seconds:.1f} s for {waited_for} (deadline exceeded)")
        self.waited_for = waited_for
        self.seconds = seconds


class ProducerDiedError(RuntimeError):
    """The rollout producer (a thread, or the process running the engine) stopped with an
    error or exited; the message names the step it was producing and the cause."""


class WeightSyncMismatchError(RuntimeError):
    """The weights an engine generates with are not the trainer's version it claims: their
    checksums differ (e.g. a LoRA adapter that never reached the engine)."""

    def __init__(self, version: int, trainer_checksum: str, engine_checksum: str) -> None:
        super().__init__(
            f"weight sync of policy version {version} failed verification: the engine holds "
            f"weights with checksum {engine_checksum}, the trainer sent {trainer_checksum}"
        )
        self.version = version
        self.trainer_checksum = trainer_checksum
        self.engine_checksum = engine_checksum
