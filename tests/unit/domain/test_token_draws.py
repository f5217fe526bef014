"""Sampling distributions (temperature, top-k, top-p, min-p) by hand; seeded draws."""

from __future__ import annotations

import math

import torch

from lightrft.domain.sampling import TokenDistribution, draw, sampling_logprobs

# p = (0.5, 0.25, 0.125, 0.125) at temperature 1
LOGITS = torch.log(torch.tensor([[0.5, 0.25, 0.125, 0.125]]))
NEG_INF = float("-inf")


def probs(dist: TokenDistribution) -> torch.Tensor:
    return sampling_logprobs(LOGITS, dist).exp()[0]


def test_no_filter_is_log_softmax_at_temperature() -> None:
    # temperature 0.5 squares the probabilities: (1/4, 1/16, 1/64, 1/64) / (22/64)
    expected = torch.tensor([16.0, 4.0, 1.0, 1.0]) / 22.0
    torch.testing.assert_close(probs(TokenDistribution(0.5)), expected)


def test_greedy_reports_temperature_one_log_probs() -> None:
    lp = sampling_logprobs(LOGITS, TokenDistribution(0.0, top_k=1))
    torch.testing.assert_close(lp, torch.log_softmax(LOGITS, -1))
    assert draw(lp, True, None).tolist() == [0]


def test_top_k_renormalizes_the_kept_tokens() -> None:
    # keep 0.5 and 0.25 -> (2/3, 1/3)
    torch.testing.assert_close(
        probs(TokenDistribution(1.0, top_k=2)), torch.tensor([2 / 3, 1 / 3, 0.0, 0.0])
    )


def test_top_p_keeps_the_smallest_nucleus_reaching_p() -> None:
    # p = 0.6: 0.5 < 0.6, 0.5 + 0.25 >= 0.6 -> keep two tokens
    torch.testing.assert_close(
        probs(TokenDistribution(1.0, top_p=0.6)), torch.tensor([2 / 3, 1 / 3, 0.0, 0.0])
    )
    # p = 0.5: the first token alone reaches it
    torch.testing.assert_close(
        probs(TokenDistribution(1.0, top_p=0.5)), torch.tensor([1.0, 0.0, 0.0, 0.0])
    )


def test_min_p_drops_tokens_below_a_fraction_of_the_max() -> None:
    # threshold 0.3 * 0.5 = 0.15: keeps 0.5 and 0.25
    lp = sampling_logprobs(LOGITS, TokenDistribution(1.0, min_p=0.3))
    assert lp[0, 2] == NEG_INF and lp[0, 3] == NEG_INF
    torch.testing.assert_close(lp[0, :2], torch.tensor([math.log(2 / 3), math.log(1 / 3)]))


def test_draws_follow_the_distribution_and_the_generator() -> None:
    lp = sampling_logprobs(LOGITS.expand(4000, 4), TokenDistribution(1.0, top_k=2))
    gen = torch.Generator().manual_seed(0)
    tokens = draw(lp, False, gen)
    assert set(tokens.tolist()) == {0, 1}
    assert abs((tokens == 0).float().mean().item() - 2 / 3) < 0.03
    again = draw(lp, False, torch.Generator().manual_seed(0))
    assert torch.equal(tokens, again)
