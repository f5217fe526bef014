"""Runs a group of annotation stages inside one phase (the no-grad forwards in the
reference phase: the plan wakes the policy, reference, teachers and critic together)."""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.application.phases import PhaseSwitcher
from lightrft.application.stages.records import Annotation, AnnotationStage


class InPhase:
    """``stages`` in order with the plan of ``phase`` in force."""

    def __init__(self, phases: PhaseSwitcher, phase: str, stages: Sequence[AnnotationStage]):
        self.phases, self.phase, self.stages = phases, phase, tuple(stages)

    def __call__(self, work: Annotation) -> None:
        """Enters the phase once and runs every stage on ``work``."""
        with self.phases.phase(self.phase):
            for stage in self.stages:
                stage(work)
