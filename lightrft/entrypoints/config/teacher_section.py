"""The ``teacher`` section: the frozen teacher models of on-policy distillation
(``algorithm.advantage_estimator=opd``; docs/algorithms.md, "On-policy distillation").

A teacher is a local model directory (``path``, loaded like the reference) or a served model
(``url``: SGLang's native ``/generate`` or vLLM's ``/v1/completions``, asked for the
log-probs of the student's token ids; :mod:`lightrft.adapters.remote_teacher`)."""

from __future__ import annotations

from pydantic import Field, model_validator

from lightrft.entrypoints.config.base import Section


class TeacherModelConfig(Section):
    path: str | None = Field(
        None, min_length=1, description="Directory of one teacher (a HF causal LM)."
    )
    url: str | None = Field(
        None,
        min_length=1,
        description="A served teacher instead of a directory: SGLang's http://HOST:PORT/generate "
        "or vLLM's http://HOST:PORT/v1/completions (the student's token ids go out as they are).",
    )
    tokenizer: str | None = Field(
        None,
        min_length=1,
        description="Directory of a served teacher's tokenizer, checked against the student's "
        "(null: the model path the server reports, when it is a directory here).",
    )
    weight: float = Field(
        1.0, gt=0, description="The teacher's weight w_k (weights are normalized to sum to 1)."
    )
    timeout_s: float = Field(120.0, gt=0, description="A served teacher: deadline per attempt.")
    max_attempts: int = Field(
        4, ge=1, description="A served teacher: attempts per request (5xx, 429, timeouts retried)."
    )
    request_batch: int = Field(32, ge=1, description="A served teacher: sequences per request.")

    @model_validator(mode="after")
    def _one_source(self) -> TeacherModelConfig:
        if (self.path is None) == (self.url is None):
            raise ValueError("a teacher has a path (a directory) or a url (a server), one of them")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"teacher url must start with http:// or https://, got {self.url!r}")
        if self.tokenizer is not None and self.url is None:
            raise ValueError(
                "teacher tokenizer is for a served teacher (url); a directory has its own"
            )
        return self

    @property
    def source(self) -> str:
        """The teacher's directory or URL."""
        return self.path if self.path is not None else str(self.url)


class TeacherConfig(Section):
    path: str | None = Field(
        None, description="One teacher's directory (shorthand for models: [{path: ...}])."
    )
    url: str | None = Field(
        None, description="One served teacher's URL (shorthand for models: [{url: ...}])."
    )
    models: list[TeacherModelConfig] = Field(
        default_factory=list,
        description="Several teachers with weights; the advantage uses their weighted "
        "log-probs. Each must use the student's tokenizer.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> TeacherConfig:
        if self.path is not None and self.url is not None:
            raise ValueError("teacher: give teacher.path or teacher.url, not both")
        if self.path is not None and self.models:
            raise ValueError("teacher: give teacher.path or teacher.models, not both")
        if self.url is not None and self.models:
            raise ValueError("teacher: give teacher.url or teacher.models, not both")
        return self

    def teachers(self) -> list[TeacherModelConfig]:
        """Every teacher (the shorthand as one entry)."""
        if self.models:
            return list(self.models)
        if self.path is None and self.url is None:
            return []
        return [TeacherModelConfig(path=self.path, url=self.url)]

    def weighted(self) -> list[tuple[str, float]]:
        """(directory or URL, normalized weight) of every teacher; empty without teachers."""
        models = self.teachers()
        total = sum(m.weight for m in models)
        return [(m.source, m.weight / total) for m in models]
