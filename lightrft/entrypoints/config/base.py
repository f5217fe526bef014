"""The base of every config model: frozen, unknown keys refused, defaults validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """Base of every config section: frozen, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
