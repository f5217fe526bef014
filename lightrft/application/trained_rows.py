"""Which samples of an experience batch the policy loss trains.

With ``TrainParams.skip_zero_advantage_rows`` the optimizer leaves out the samples whose loss
is exactly zero: every advantage zero while every loss term carries the advantage (no KL or
entropy term, no critic, a policy loss that is ``zero_without_advantage``). In GRPO these are
the groups whose samples all scored alike. The same rule tells the experience maker which
samples' old log-probs the loss will read, so it forwards only those
(:mod:`lightrft.application.stages.trained_row_selection`); one rule for both keeps the
two from drifting apart.

Shapes: B samples, R response tokens.
"""

from __future__ import annotations

from torch import Tensor

from lightrft.application.params import AlgorithmParams
from lightrft.domain.policy_losses import POLICY_LOSSES


def skips_zero_loss_rows(
    algorithm: AlgorithmParams, *, skip_zero_advantage_rows: bool, critic: bool, kl_term: bool
) -> bool:
    """Whether samples without a non-zero advantage are left out of training: asked for
    (``skip_zero_advantage_rows``) and every term of the loss is a multiple of the advantage
    (``kl_term``: the loss has a KL term; ``critic``: a critic trains beside the policy)."""
    advantage_only = (
        POLICY_LOSSES.get(algorithm.policy_loss).zero_without_advantage
        and not critic
        and algorithm.entropy_coef == 0
        and not kl_term
    )
    return skip_zero_advantage_rows and advantage_only


def rows_with_advantage(advantages: Tensor, response_mask: Tensor) -> Tensor:
    """(B,) bool: the samples with a non-zero advantage on some response token; the loss of
    the others is exactly zero when :func:`skips_zero_loss_rows` holds.
    Shapes: advantages, response_mask (B, R)."""
    return ((advantages != 0) & response_mask.bool()).any(dim=-1)
