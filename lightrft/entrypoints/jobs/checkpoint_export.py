"""Any checkpoint of a run (RL or SFT; single device, FSDP2, DeepSpeed ZeRO 0-3, LoRA) as a
Hugging Face model directory, offline, in one process on the host.

The run's ``config.yaml`` says how the policy was built and trained; the policy is built
again on the CPU (the same loader, dtype and LoRA wrapping), the checkpoint's per-rank
strategy states are merged into its full state (:mod:`wiring.checkpoint_merge`, by
``backend.strategy.type``), and that state is written by the same
``Policy.export_hf`` / ``export_adapter`` calls as the run's own final export: the model
directory (LoRA merged) and, under LoRA, the PEFT adapter in ``OUT/adapter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from torch import Tensor, nn

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.checkpoint.directory_swap import replace_directory
from lightrft.adapters.checkpoint.verify import checkpoint_stores
from lightrft.entrypoints.roots.checkpoint_export import CheckpointExportRoot
from lightrft.entrypoints.run_dir.directory import checkpoint_steps

log = structlog.get_logger(__name__)
STRATEGY_KEYS = ("policy_strategy", "strategy")  # RL cycle, single-model trainers (SFT)


@dataclass(frozen=True)
class Exported:
    """Where the export went: the model directory and, under LoRA, the adapter."""

    step: int
    model: Path
    adapter: Path | None


def export_checkpoint(run_dir: Path, out: Path, step: int | None = None) -> Exported:
    """Writes checkpoint ``step`` (default: the newest one every rank has) of ``run_dir`` to
    ``out`` (replaced atomically). Raises ``FileNotFoundError`` / ``ValueError`` with one
    line naming what is missing."""
    config_file = run_dir / "config.yaml"
    if not config_file.is_file():
        raise FileNotFoundError(f"{config_file} does not exist; expected a lightrft run directory")
    root = CheckpointExportRoot(config_file)
    checkpoints = run_dir / "checkpoints"
    if not checkpoints.is_dir():
        raise FileNotFoundError(f"{run_dir} has no checkpoints directory")
    stores = [LocalCheckpointStore(root, keep_last=None) for root in checkpoint_stores(checkpoints)]
    step = _chosen_step(checkpoint_steps(checkpoints), step, run_dir)
    rank_states = [_strategy_state(store.load(step), store.directory(step)) for store in stores]
    policy = root.policy()
    state = _complete(root.merger()(rank_states, policy.module), policy.module)
    replace_directory(out, lambda tmp: policy.export_hf(tmp, state=state))
    adapter = None
    if policy.uses_lora:
        adapter = out / "adapter"
        policy.export_adapter(adapter, state=state)
    log.info("checkpoints.exported", step=step, directory=str(out), ranks=len(stores))
    return Exported(step, out, adapter)


def _chosen_step(steps: list[int], step: int | None, run_dir: Path) -> int:
    if not steps:
        raise FileNotFoundError(f"{run_dir} has no checkpoint that every rank saved")
    if step is None:
        return steps[-1]
    if step not in steps:
        raise FileNotFoundError(
            f"{run_dir} has no checkpoint of step {step}; steps: {', '.join(map(str, steps))}"
        )
    return step


def _strategy_state(state: dict[str, Any], where: Path) -> dict[str, Any]:
    for key in STRATEGY_KEYS:
        if key in state:
            return state[key]  # type: ignore[no-any-return]
    raise ValueError(f"{where} holds no policy state (keys: {', '.join(sorted(state))})")


def _complete(state: dict[str, Tensor], module: nn.Module) -> dict[str, Tensor]:
    """``state`` with the module's frozen parameters it left out (they did not train);
    a missing trainable parameter is an error."""
    own = module.state_dict(keep_vars=True)
    missing = [name for name in own if name not in state]
    trained = [name for name in missing if own[name].requires_grad]
    if trained:
        raise ValueError(f"the checkpoint lacks trained parameters: {', '.join(trained[:5])}")
    return {**{name: own[name].detach() for name in missing}, **state}
