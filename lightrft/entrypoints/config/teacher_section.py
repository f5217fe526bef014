"""The ``teacher`` section: the frozen teacher models of on-policy distillation
(``algorithm.advantage_estimator=opd``; docs/algorithms.md, "On-policy distillation")."""

from __future__ import annotations

from pydantic import Field, model_validator

from lightrft.entrypoints.config.base import Section


class TeacherModelConfig(Section):
    path: str = Field(..., min_length=1, description="Directory of one teacher (a HF causal LM).")
    weight: float = Field(
        1.0, gt=0, description="The teacher's weight w_k (weights are normalized to sum to 1)."
    )


class TeacherConfig(Section):
    path: str | None = Field(
        None, description="One teacher's directory (shorthand for models: [{path: ...}])."
    )
    models: list[TeacherModelConfig] = Field(
        default_factory=list,
        description="Several teachers with weights; the advantage uses their weighted "
        "log-probs. Each must use the student's tokenizer.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> TeacherConfig:
        if self.path is not None and self.models:
            raise ValueError("teacher: give teacher.path or teacher.models, not both")
        return self

    def weighted(self) -> list[tuple[str, float]]:
        """(path, normalized weight) of every teacher; empty without teachers."""
        models = self.models or (
            [TeacherModelConfig(path=self.path)] if self.path is not None else []
        )
        total = sum(m.weight for m in models)
        return [(m.path, m.weight / total) for m in models]
