"""On-policy distillation (OPD): the per-token advantage from teachers' log-probs.

Shapes: K teachers, B samples, R response tokens.

The student samples a response y; every teacher scores the student's own tokens. The
advantage of token t is the negative per-token reverse KL to the teachers' weighted
(geometric) mixture, a constant for the policy gradient (stop-gradient):

    A_t = sum_k w_k * (log pi_teacher_k(y_t | x, y_<t) - log pi_student(y_t | x, y_<t))

with sum_k w_k = 1. Sources: Agarwal et al., "On-Policy Distillation of Language Models"
(GKD), arXiv:2306.13649 (reverse KL on student samples); Thinking Machines Lab, "On-Policy
Distillation" (2025: the per-token reverse KL as the reward, discount 0); NeMo-RL's
on-policy distillation (the advantage sg[log pi_teacher - log pi_student]).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from lightrft.domain.checks import check_shape
from lightrft.domain.teacher_weights import check_teacher_weights as check_teacher_weights


def teacher_advantages(
    teacher_logprobs: Tensor, weights: Sequence[float], student_logprobs: Tensor, mask: Tensor
) -> Tensor:
    """A_t = sum_k w_k (teacher_logprobs[k, :, t] - student_logprobs[:, t]); 0 off ``mask``.

    Shape: teacher_logprobs (K, B, R), student_logprobs (B, R), mask (B, R) bool -> (B, R).
    Detached: no gradient reaches the student through its own log-probs here.
    """
    check_shape("teacher_logprobs", teacher_logprobs, (len(weights), *student_logprobs.shape))
    w = torch.tensor(list(weights), dtype=student_logprobs.dtype, device=student_logprobs.device)
    mixed = (w.view(-1, 1, 1) * teacher_logprobs.to(student_logprobs.dtype)).sum(dim=0)  # [B, R]
    gap = (mixed - student_logprobs).detach()
    return torch.where(mask, gap, torch.zeros_like(gap))
