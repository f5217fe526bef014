"""Bases of the reward sources: ``NamedSource`` (the name), ``RuleSource`` (no model: it
may be scored beside other sources on a thread and has no weights to move between phases;
sources with cleanup of their own, a worker process or an HTTP client, still define
``close``) and ``ColocatedModelSource`` (a model on the training device: scored one source
at a time, since two models on one device would contend for its memory)."""

from __future__ import annotations


class NamedSource:
    """A reward source's name; subclasses set ``_name``."""

    _name: str

    @property
    def name(self) -> str:
        """Metric prefix and composite-weight key."""
        return self._name


class RuleSource(NamedSource):
    """Base of the rule, remote and function reward sources."""

    runs_concurrently = True  # no model on the device: may run beside other sources

    def onload(self) -> None:
        """No weights: nothing to do."""

    def offload(self) -> None:
        """No weights: nothing to do."""


class ColocatedModelSource(NamedSource):
    """Base of the scalar and generative reward models."""

    runs_concurrently = False  # a model on the device: one source at a time
