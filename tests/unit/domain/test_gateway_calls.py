"""Joining a black-box agent's calls into trained rows (lightrft/domain/token_continuity.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lightrft.domain.token_continuity import RecordedCall, join_calls

ids = st.lists(st.integers(0, 50), min_size=1, max_size=6).map(tuple)


def call(prompt: tuple[int, ...], sampled: tuple[int, ...]) -> RecordedCall:
    return RecordedCall(prompt, sampled, tuple(-0.5 for _ in sampled), "t", "stop")


def test_a_continuing_conversation_is_one_row_with_observations_masked() -> None:
    first = call((1, 2), (10, 11))
    second = call((1, 2, 10, 11, 7, 8), (12,))
    third = call((1, 2, 10, 11, 7, 8, 12), (13, 14))  # no ids between the calls
    (row,) = join_calls([first, second, third]).chains
    assert row.prompt_ids == (1, 2)
    assert row.token_ids == (10, 11, 7, 8, 12, 13, 14)
    assert row.loss_mask == (1, 1, 0, 0, 1, 1, 1)
    assert len(row.calls) == 3
    assert [s.trained for s in row.segments] == [True, False, True, True]


def test_a_rewritten_history_starts_a_new_row() -> None:
    first = call((1, 2), (10, 11))
    rewritten = call((1, 2, 10, 9, 7), (12,))  # the agent edited the model's turn
    rows = join_calls([first, rewritten]).chains
    assert [r.prompt_ids for r in rows] == [(1, 2), (1, 2, 10, 9, 7)]
    assert [r.token_ids for r in rows] == [(10, 11), (12,)]
    assert all(set(r.loss_mask) == {1} for r in rows)


def test_a_call_goes_on_from_the_choice_it_extends() -> None:
    # n = 2: two choices of one call; the agent continues from the second
    a, b = call((1,), (5,)), call((1,), (6,))
    later = call((1, 6, 3), (7,))
    rows = join_calls([a, b, later]).chains
    assert [(r.prompt_ids, r.token_ids, r.loss_mask) for r in rows] == [
        ((1,), (5,), (1,)),
        ((1,), (6, 3, 7), (1, 0, 1)),
    ]


@st.composite
def chains(draw: st.DrawFn) -> list[RecordedCall]:
    """Calls of an agent that never rewrites: each prompt extends the last context."""
    prompt = draw(ids)
    calls = []
    for _ in range(draw(st.integers(1, 5))):
        sampled = draw(ids)
        calls.append(call(prompt, sampled))
        prompt = prompt + sampled + draw(st.lists(st.integers(0, 50), max_size=4).map(tuple))
    return calls


@settings(max_examples=60, deadline=None)
@given(chains())
def test_a_history_kept_as_sent_is_one_row_equal_to_the_last_context(calls) -> None:
    (row,) = join_calls(calls).chains
    assert row.prompt_ids + row.token_ids == calls[-1].context
    trained = [t for t, m in zip(row.token_ids, row.loss_mask, strict=True) if m]
    assert trained == [t for c in calls for t in c.sampled_ids]
    assert len(row.calls) == len(calls)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(ids, ids), min_size=1, max_size=6))
def test_any_calls_train_every_sampled_id_once_and_only_those(pairs) -> None:
    calls = [call(p, s) for p, s in pairs]
    rows = join_calls(calls).chains
    trained = sorted(t for r in rows for t, m in zip(r.token_ids, r.loss_mask, strict=True) if m)
    assert trained == sorted(t for c in calls for t in c.sampled_ids)
    assert sum(len(r.calls) for r in rows) == len(calls)
    # every call's context is a prefix of its row: the engine saw exactly the row's ids
    for r in rows:
        full = r.prompt_ids + r.token_ids
        assert any(full[: len(c.context)] == c.context for c in calls)
    # logprobs travel with the sampled ids
    for r in rows:
        for s in r.segments:
            assert (s.logprobs is not None) == s.trained
