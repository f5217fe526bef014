"""On-policy distillation (``opd``): hand-computed per-token advantages, the mix with GRPO's
group advantage, and input errors."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.domain.advantages import AdvantageInputs, AdvantageParams, compute_advantages
from lightrft.domain.distillation import teacher_advantages

NAN = float("nan")
# two samples of one prompt; the second has 2 response tokens (its third is padding)
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])
STUDENT = torch.tensor([[-1.0, -2.0, -0.5], [-0.2, -3.0, 0.0]], dtype=torch.float64)
TEACHER_1 = [[-0.5, -2.0, -1.5], [-0.2, -1.0, NAN]]  # NaN on padding: never read
TEACHER_2 = [[-1.0, -1.0, -0.5], [-1.0, -3.0, NAN]]
TEACHERS = torch.tensor([TEACHER_1, TEACHER_2], dtype=torch.float64)
WEIGHTS = (0.25, 0.75)
# mix = 0.25 t1 + 0.75 t2: row 0: -0.875, -1.25, -0.75; row 1: -0.8, -2.5
# A = mix - student:       row 0:  0.125,  0.75, -0.25; row 1: -0.6,  0.5, (pad) 0
OPD = [[0.125, 0.75, -0.25], [-0.6, 0.5, 0.0]]


def _inputs(rewards: tuple[float, float] = (1.0, 0.0)) -> AdvantageInputs:
    return AdvantageInputs(
        rewards=torch.tensor(rewards, dtype=torch.float64),
        response_mask=MASK,
        group_index=torch.tensor([0, 0]),
        logprobs=STUDENT,
        teacher_logprobs=TEACHERS,
    )


def test_opd_is_the_weighted_teacher_minus_student_logprob_per_token() -> None:
    out = compute_advantages("opd", _inputs(), AdvantageParams(teacher_weights=WEIGHTS))
    torch.testing.assert_close(out.advantages, torch.tensor(OPD, dtype=torch.float64))
    # reverse KL = mean of -A over the 5 counted tokens = -(0.125+0.75-0.25-0.6+0.5)/5
    assert float(out.metrics["distill/reverse_kl"]) == pytest.approx(-0.105)


def test_opd_alone_ignores_the_rewards() -> None:
    params = AdvantageParams(teacher_weights=WEIGHTS)
    a = compute_advantages("opd", _inputs((1.0, 0.0)), params).advantages
    b = compute_advantages("opd", _inputs((5.0, -3.0)), params).advantages
    torch.testing.assert_close(a, b)


def test_opd_mixed_with_the_grpo_advantage_by_opd_weight() -> None:
    params = AdvantageParams(teacher_weights=WEIGHTS, opd_weight=0.5)
    out = compute_advantages("opd", _inputs((1.0, 0.0)), params)
    # GRPO: rewards [1, 0], mean 0.5, Bessel std sqrt(0.5): scores +-0.5/sqrt(0.5) = +-1/sqrt(2)
    g = 1 / math.sqrt(2)
    want = [
        [0.5 * 0.125 + 0.5 * g, 0.5 * 0.75 + 0.5 * g, 0.5 * -0.25 + 0.5 * g],
        [0.5 * -0.6 - 0.5 * g, 0.5 * 0.5 - 0.5 * g, 0.0],
    ]
    torch.testing.assert_close(
        out.advantages, torch.tensor(want, dtype=torch.float64), atol=1e-6, rtol=1e-6
    )


def test_one_teacher_is_teacher_minus_student() -> None:
    out = compute_advantages(
        "opd",
        AdvantageInputs(
            rewards=torch.zeros(2),
            response_mask=MASK,
            group_index=torch.tensor([0, 1]),
            logprobs=STUDENT,
            teacher_logprobs=TEACHERS[:1],
        ),
    )
    # row 0: -0.5+1, -2+2, -1.5+0.5; row 1: -0.2+0.2, -1+3
    want = torch.tensor([[0.5, 0.0, -1.0], [0.0, 2.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(out.advantages, want)


def test_the_advantage_carries_no_gradient() -> None:
    student = STUDENT.clone().requires_grad_(True)
    got = teacher_advantages(TEACHERS, WEIGHTS, student, MASK.bool())
    assert not got.requires_grad


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("teacher_logprobs", None, "needs inputs.teacher_logprobs"),
        ("logprobs", None, "needs inputs.logprobs"),
        ("teacher_logprobs", TEACHERS[:1], r"teacher_logprobs must have shape \(2, 2, 3\)"),
    ],
)
def test_missing_or_misshapen_inputs_name_the_field(
    field: str, value: object, message: str
) -> None:
    fields = {**_inputs().__dict__, field: value}
    with pytest.raises(ValueError, match=message):
        compute_advantages(
            "opd", AdvantageInputs(**fields), AdvantageParams(teacher_weights=WEIGHTS)
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"teacher_weights": ()}, "teacher_weights is empty"),
        ({"teacher_weights": (0.5, 0.6)}, "must sum to 1"),
        ({"teacher_weights": (1.5, -0.5)}, "must all be > 0"),
        ({"opd_weight": 1.5}, r"opd_weight must lie in \[0, 1\]"),
    ],
)
def test_bad_params_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AdvantageParams(**kwargs)  # type: ignore[arg-type]


def test_a_nan_teacher_logprob_on_a_counted_token_is_refused() -> None:
    bad = TEACHERS.clone()
    bad[0, 0, 1] = NAN
    fields = {**_inputs().__dict__, "teacher_logprobs": bad}
    with pytest.raises(ValueError, match="teacher_logprobs"):
        compute_advantages(
            "opd", AdvantageInputs(**fields), AdvantageParams(teacher_weights=WEIGHTS)
        )
