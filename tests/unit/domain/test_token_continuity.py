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


def test_a_call_continues_the_longest_open_chain_and_a_break_names_the_nearest() -> None:
    calls = [
        RecordedCall((1,), (2,), text="a"),  # n = 2: two choices of one call
        RecordedCall((1,), (2, 3), text="b"),  # a split: differs from (1, 2) at 1
        RecordedCall((1, 2, 3, 4), (5,), text="c"),  # begins with both contexts: the longer
        RecordedCall((1, 2, 3, 4, 5), (), text=""),  # sampled nothing: skipped
        RecordedCall((1, 2, 6), (7,), text="d"),  # goes back on from the first choice
        RecordedCall((1, 2, 3, 4, 8), (9,), text="e"),  # a split: follows (1, 2, 3, 4, 5) to 4
    ]
    joined = join_calls(calls)
    assert [c.calls for c in joined.chains] == [(0, 4), (1, 2), (5,)]
    assert [(c.prompt_ids, c.token_ids, c.loss_mask) for c in joined.chains] == [
        ((1,), (2, 6, 7), (1, 0, 1)),
        ((1,), (2, 3, 4, 5), (1, 1, 0, 1)),
        ((1, 2, 3, 4, 8), (9,), (1,)),
    ]
    assert [(b.call, b.position, b.context_length) for b in joined.breaks] == [(1, 1, 2), (5, 4, 5)]
    assert joined.splits == 2
    # trained segments keep the call's text; observations have none
    assert [s.text for s in joined.chains[0].segments] == ["a", "", "d"]
    assert [c.text for c in joined.chains] == ["d", "c", "e"]


def test_calls_that_sampled_nothing_make_no_chain() -> None:
    joined = join_calls([RecordedCall((1, 2), ()), RecordedCall((3,), ())])
    assert joined.chains == () and joined.splits == 0
