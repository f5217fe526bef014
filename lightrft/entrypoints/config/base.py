"""The base of every config model: frozen, unknown keys refused, defaults validated, no
infinite or NaN floats."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """Base of every config section: frozen, unknown keys refused; a float field refuses
    ``.inf`` / ``.nan`` (``optim.lr=.inf`` would pass every bound)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False
    )
