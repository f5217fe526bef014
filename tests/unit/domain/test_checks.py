"""check_token_tensor: the per-token checks the losses share, in their order."""

from __future__ import annotations

import pytest
import torch

from lightrft.domain.checks import check_token_tensor


def test_a_matching_token_tensor_passes() -> None:
    mask = torch.tensor([[1, 0], [1, 1]])
    check_token_tensor("kl", torch.zeros(2, 2), mask, ref_logprobs=torch.zeros(2, 2))


def test_a_tensor_that_is_not_2d_is_named() -> None:
    with pytest.raises(ValueError, match=r"kl must have shape \(\*, \*\), got \(4,\)"):
        check_token_tensor("kl", torch.zeros(4), torch.ones(2, 2))


def test_the_other_tensors_are_checked_before_the_mask() -> None:
    # ref_logprobs (2, 3) and response_mask (2, 1) both mismatch (2, 2): ref_logprobs is named
    with pytest.raises(ValueError, match=r"ref_logprobs has shape \(2, 3\) but logprobs"):
        check_token_tensor(
            "logprobs", torch.zeros(2, 2), torch.ones(2, 1), ref_logprobs=torch.zeros(2, 3)
        )
    with pytest.raises(ValueError, match=r"response_mask has shape \(2, 1\)"):
        check_token_tensor("logprobs", torch.zeros(2, 2), torch.ones(2, 1))


def test_an_empty_or_non_binary_mask_is_refused() -> None:
    with pytest.raises(ValueError, match="selects no token"):
        check_token_tensor("loss", torch.zeros(1, 2), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="only 0 and 1"):
        check_token_tensor("loss", torch.zeros(1, 2), torch.tensor([[1, 2]]))
