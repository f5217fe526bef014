"""Turn-level credit: the per-token rewards of multi-turn episodes (docs/agents.md).

:func:`turn_token_rewards` puts each turn's environment reward on the last generated token
of that turn and what remains of the sample's (shaped) reward, ``r_i - sum_t r_{i,t}``
(other reward sources, reward shaping), on the row's last generated token, so a row sums to
its reward. A sample that is not an episode keeps all of its reward on its last token. The
advantage estimators read the result as ``AdvantageInputs.token_rewards``
(:mod:`lightrft.domain.advantages`).

Shapes: B samples, R response tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from lightrft.domain.trajectory import Episode


def turn_token_rewards(
    episodes: Sequence[Episode | None], rewards: Tensor, response_mask: Tensor
) -> Tensor:
    """Token rewards (B, R) of ``episodes`` (one per row, ``None``: not an episode).

    ``rewards`` (B,) are the samples' rewards after shaping; ``response_mask`` (B, R) is 1
    on generated tokens, its columns the episodes' response positions.
    """
    b, r = response_mask.shape
    if rewards.shape != (b,) or len(episodes) != b:
        raise ValueError(
            f"turn_token_rewards: {len(episodes)} episodes, rewards {tuple(rewards.shape)} "
            f"and response_mask {tuple(response_mask.shape)} must agree on B"
        )
    mask = response_mask.bool()
    dtype = rewards.dtype if rewards.is_floating_point() else torch.get_default_dtype()
    out = torch.zeros((b, r), dtype=dtype)
    for row, episode in enumerate(episodes):
        counted = mask[row].nonzero().flatten()
        if counted.numel() == 0:
            continue
        rest = float(rewards[row])
        if episode is not None:
            ends = episode.turn_ends()
            for end, reward in zip(ends, episode.turn_rewards, strict=False):
                if end >= r or not bool(mask[row, end]):
                    raise ValueError(
                        f"row {row}: turn end {end} is not a generated token of the response"
                    )
                out[row, end] += reward
                rest -= reward
        out[row, int(counted[-1])] += rest
    return out
