"""``RuleSource``: what every reward source without a model shares: its name, leave to run
beside other sources on a thread (it holds no device memory), and no weights to move
between phases. Sources with cleanup of their own (a worker process, an HTTP client)
still define ``close``."""

from __future__ import annotations


class RuleSource:
    """Base of the rule, remote and function reward sources; subclasses set ``_name``."""

    _name: str

    @property
    def name(self) -> str:
        """Metric prefix and composite-weight key."""
        return self._name

    @property
    def runs_concurrently(self) -> bool:
        """True: no model on the device, so it may be scored beside other sources."""
        return True

    def onload(self) -> None:
        """No weights: nothing to do."""

    def offload(self) -> None:
        """No weights: nothing to do."""
