"""join_calls: recorded calls whose prompts continue each other form one trajectory, token for
token; a call whose prompt does not continue the context starts a new chain, counted."""

from __future__ import annotations

import pytest

from lightrft.domain.token_continuity import RecordedCall, first_difference, join_calls


def test_chained_calls_form_one_trajectory_with_observations_between() -> None:
    calls = [
        RecordedCall((1, 2, 3), (10, 11), (-0.5, -0.25)),
        RecordedCall((1, 2, 3, 10, 11, 7, 8), (12,), (-1.0,)),
        RecordedCall((1, 2, 3, 10, 11, 7, 8, 12, 9), (13, 14), (-0.1, -0.2)),
    ]
    joined = join_calls(calls)
    assert joined.splits == 0
    (chain,) = joined.chains
    assert chain.calls == (0, 1, 2)
    assert chain.prompt_ids == (1, 2, 3)
    assert chain.token_ids == (10, 11, 7, 8, 12, 9, 13, 14)
    assert chain.loss_mask == (1, 1, 0, 0, 1, 0, 1, 1)
    # the last call's prompt + sample is the chain, exactly
    assert chain.prompt_ids + chain.token_ids == calls[-1].prompt_ids + calls[-1].sampled_ids
    assert [s.logprobs for s in chain.segments if s.trained] == [
        (-0.5, -0.25),
        (-1.0,),
        (-0.1, -0.2),
    ]


def test_a_rewritten_history_splits_the_episode_where_it_differs() -> None:
    calls = [
        RecordedCall((1, 2), (10,)),
        RecordedCall((1, 2, 10, 5), (11,)),
        RecordedCall((1, 2, 99, 5, 11, 6), (12,)),  # the agent rewrote the first answer
        RecordedCall((1, 2, 99, 5, 11, 6, 12, 4), (13,)),
    ]
    joined = join_calls(calls)
    assert joined.splits == 1
    assert [c.calls for c in joined.chains] == [(0, 1), (2, 3)]
    (cut,) = joined.breaks
    assert (cut.call, cut.position, cut.context_length) == (2, 2, 5)
    assert joined.chains[1].prompt_ids == (1, 2, 99, 5, 11, 6)
    assert joined.chains[1].loss_mask == (1, 0, 1)


def test_a_truncated_prompt_and_an_empty_observation() -> None:
    # the next call drops the last sampled token: not a continuation
    assert join_calls([RecordedCall((1,), (2, 3)), RecordedCall((1, 2), (4,))]).splits == 1
    # the next call's prompt is exactly the context: no observation segment between
    joined = join_calls([RecordedCall((1,), (2,)), RecordedCall((1, 2), (3,))])
    assert joined.splits == 0
    assert [s.trained for s in joined.chains[0].segments] == [True, True]


def test_first_difference() -> None:
    assert first_difference((1, 2, 3), (1, 2, 3)) is None
    assert first_difference((1, 5, 3), (1, 2, 3)) == 1
    assert first_difference((1, 2), (1, 2, 3)) == 2
    assert join_calls([]).chains == ()


def test_logprobs_must_match_the_sample() -> None:
    with pytest.raises(ValueError, match="2 sampled ids but 1 logprobs"):
        RecordedCall((1,), (2, 3), (-0.1,))
