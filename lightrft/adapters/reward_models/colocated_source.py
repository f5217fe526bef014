"""``ColocatedModelSource``: what the reward sources that run a model on the training
device share: their name, and that they are scored one at a time (two models on one device
would contend for its memory)."""

from __future__ import annotations


class ColocatedModelSource:
    """Base of the scalar and generative reward models; subclasses set ``_name``."""

    _name: str

    @property
    def name(self) -> str:
        """Metric prefix and composite-weight key."""
        return self._name

    @property
    def runs_concurrently(self) -> bool:
        """False: a model on the device: one source at a time."""
        return False
