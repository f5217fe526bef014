"""Whether a checkpoint's weights fit the model they are loaded into.

Resuming with ``--resume-changing model.path`` may name a model of another architecture;
loading its checkpoint would fail deep in torch with one ``size mismatch`` line per tensor.
:func:`check_weights_fit` compares the shapes first and raises one
:class:`CheckpointShapeError` naming an example tensor; the resume code adds which checkpoint
(:meth:`CheckpointShapeError.at_step`) and the entrypoint where it lies.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor


class CheckpointShapeError(ValueError):
    """The checkpoint's weights do not fit this model (other shapes or other tensors)."""

    def __init__(self, detail: str, step: int | None = None, where: str = "") -> None:
        self.detail, self.step = detail, step
        name = "the checkpoint" if step is None else f"the checkpoint of step {step}"
        super().__init__(f"the weights of {name}{where} do not fit this model: {detail}")

    def at_step(self, step: int) -> CheckpointShapeError:
        """The same error, naming the checkpoint's step."""
        return CheckpointShapeError(self.detail, step)

    def explained(self, checkpoint: str, model_path: str) -> CheckpointShapeError:
        """The same error naming the checkpoint's path and what to do about ``model_path``."""
        advice = (
            f"; model.path ({model_path}) must name a model of the checkpoint's architecture "
            "(the one the run was started with, or one of the same shapes)"
        )
        return CheckpointShapeError(self.detail + advice, self.step, f" in {checkpoint}")


def _shape(t: Tensor) -> list[int]:
    return list(t.shape)


def check_weights_fit(saved: Mapping[str, Tensor], model: Mapping[str, Tensor]) -> None:
    """Raises :class:`CheckpointShapeError` unless ``saved`` holds a tensor of the same shape
    for every tensor of ``model`` and nothing else."""
    differ = [k for k in saved if k in model and _shape(saved[k]) != _shape(model[k])]
    missing = [k for k in model if k not in saved]
    extra = [k for k in saved if k not in model]
    if differ:
        k = differ[0]
        more = f" (and {len(differ) - 1} more tensors differ)" if len(differ) > 1 else ""
        raise CheckpointShapeError(
            f"tensor {k} has shape {_shape(saved[k])} in the checkpoint and "
            f"{_shape(model[k])} in this model{more}"
        )
    if missing or extra:
        parts = []
        if missing:
            parts.append(
                f"this model's {missing[0]} is not in the checkpoint ({len(missing)} such)"
            )
        if extra:
            parts.append(f"the checkpoint's {extra[0]} is not in this model ({len(extra)} such)")
        raise CheckpointShapeError("; ".join(parts))
