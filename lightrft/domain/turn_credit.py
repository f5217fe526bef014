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
    ends = [() if e is None else tuple(e.turn_ends()) for e in episodes]
    values = [() if e is None else tuple(e.turn_rewards) for e in episodes]
    dtype = rewards.dtype if rewards.is_floating_point() else torch.get_default_dtype()
    out, _ = rewards_at_ends(ends, values, response_mask, dtype=dtype, what="turn")
    mask = response_mask.bool()
    for row in range(b):
        counted = mask[row].nonzero().flatten()
        if counted.numel() == 0:
            continue
        rest = float(rewards[row])  # the rest of the reward on the row's last generated token
        for _, reward in zip(ends[row], values[row], strict=False):
            rest -= reward
        out[row, int(counted[-1])] += rest
    return out


def rewards_at_ends(
    ends: Sequence[Sequence[int]],
    values: Sequence[Sequence[float]],
    response_mask: Tensor,
    *,
    dtype: torch.dtype | None = None,
    what: str = "segment",
) -> tuple[Tensor, Tensor]:
    """Each segment's value on its last token: (values (B, R), ends mask (B, R) bool).

    ``ends[i]`` are the response positions where row i's segments (turns, reasoning steps)
    end and ``values[i]`` their rewards, paired in order (a segment without a value, e.g. a
    turn that never reached the environment, is left out); an end must be a counted token of
    ``response_mask`` (B, R), else ``ValueError`` naming the row. Values at one position add up.
    """
    b, r = response_mask.shape
    if len(ends) != b or len(values) != b:
        raise ValueError(f"{len(ends)} rows of {what} ends for a response_mask of {b} rows")
    mask = response_mask.bool()
    out = torch.zeros((b, r), dtype=dtype or torch.get_default_dtype())
    at_end = torch.zeros((b, r), dtype=torch.bool)
    for row, (row_ends, row_values) in enumerate(zip(ends, values, strict=True)):
        for end, value in zip(row_ends, row_values, strict=False):
            if not 0 <= end < r or not bool(mask[row, end]):
                raise ValueError(
                    f"row {row}: {what} end {end} is not a generated token of the response"
                )
            out[row, end] += value
            at_end[row, end] = True
    return out, at_end
