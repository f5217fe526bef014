"""The build context of a verb that builds components but trains no policy (a reward model,
a judge, a served reward source): asking it for the policy is an error naming the verb."""

from __future__ import annotations

from pathlib import Path

import torch

from lightrft.domain.ports import Policy
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.wiring.registries import BuildContext


def policy_free_context(
    config: RunConfig, model_path: Path, device: torch.device, *, who: str
) -> BuildContext:
    """A context without tokenizer or policy; ``who`` names the caller in the error."""

    def no_policy() -> Policy:
        raise RuntimeError(f"{who} has no policy")

    return BuildContext(config, model_path, device, None, no_policy)
