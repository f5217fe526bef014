"""Exact tokens across turns, per model family (Qwen2.5, Llama 3, SmolLM2, Qwen2.5-VL): an agent
loop that renders its whole conversation with the chat template at every call (what a
black-box agent behind an OpenAI-compatible endpoint does) records, call after call, prompts
that continue each other; the template's rendering of the final transcript equals the first
prompt + every sampled and observation id. Where the tokens would differ (a non-canonical
sample, an agent that rewrites its history, a template that rewrites earlier turns), the
calls do not chain and the episode is split, never re-tokenized."""

from __future__ import annotations

from typing import Any

import pytest

from lightrft.adapters.hf.template_round_trip import template_round_trip
from lightrft.domain.token_continuity import RecordedCall, join_calls
from tests.unit.adapters.hf.chat_templates import FAMILIES, Family, family_tokenizer

QUESTION = "What is 1234 * 5678? Use the calculator."
ANSWERS = [  # (model turn, the messages that answer it)
    ('<tool_call>\n{"name": "calculator", "arguments": {"expression": "12 * 34"}}\n</tool_call>',
     [{"role": "tool", "content": "408"}]),
    ("Let me check again.", [{"role": "user", "content": "Are you sure? print(sum(range(10)))"}]),
    ("The answer is 408.", []),
]  # fmt: skip


def user_turn(family: Family) -> dict[str, Any]:
    if family.name == "qwen2.5-vl":  # an image part, as a VL agent sends it
        return {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}
    return {"role": "user", "content": QUESTION}


def run_agent(
    family: Family, sample: Any = None, rewrite: bool = False
) -> tuple[list[RecordedCall], list[dict[str, Any]], Any]:
    """A text agent loop: each call's prompt is the template on the conversation so far
    (with the generation prompt), the model's turn its content's ids + end of turn
    (``sample(tok, content)`` overrides the ids). ``rewrite``: the agent shortens its first
    answer in the history before the last call."""
    tok = family_tokenizer(family)
    eot = tok.convert_tokens_to_ids(family.end_of_turn)
    messages: list[dict[str, Any]] = [user_turn(family)]
    calls = []
    for index, (content, answer) in enumerate(ANSWERS):
        if rewrite and index == len(ANSWERS) - 1:
            messages[1] = {"role": "assistant", "content": "(tool call)"}
        text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt = tuple(tok.encode(str(text), add_special_tokens=False))
        ids = sample(tok, content) if sample else tok.encode(content, add_special_tokens=False)
        calls.append(RecordedCall(prompt, (*ids, eot)))
        messages += [{"role": "assistant", "content": content}, *answer]
    return calls, messages, tok


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_template_round_trip_is_exact(family: Family) -> None:
    calls, messages, tok = run_agent(family)
    trip = template_round_trip(tok, messages, calls)
    assert trip.exact, (family.name, trip.first_difference)
    (chain,) = trip.joined.chains
    assert chain.prompt_ids + chain.token_ids == trip.recorded
    sampled = [t for t, m in zip(chain.token_ids, chain.loss_mask, strict=True) if m]
    assert sampled == [t for c in calls for t in c.sampled_ids]  # trained ids = sampled ids


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_a_non_canonical_sample_splits_the_episode(family: Family) -> None:
    """The model spelled "408" digit by digit where the tokenizer merges it: the next
    prompt (the template on the text) carries the merged ids, so the calls are split there;
    each chain keeps the ids the model sampled."""

    def spelled(tok: Any, content: str) -> list[int]:
        ids = tok.encode(content, add_special_tokens=False)
        return [
            t for c in tok.convert_ids_to_tokens(ids) for t in tok.convert_tokens_to_ids(list(c))
        ]

    calls, messages, tok = run_agent(family, spelled)
    assert tok.encode("408", add_special_tokens=False) != [
        tok.convert_tokens_to_ids(c) for c in "408"
    ]
    trip = template_round_trip(tok, messages, calls)
    assert not trip.exact
    assert trip.joined.splits == len(calls) - 1
    for chain, call in zip(trip.joined.chains, calls, strict=True):
        assert chain.token_ids == call.sampled_ids


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_an_agent_that_rewrites_its_history_is_split_and_counted(family: Family) -> None:
    calls, messages, tok = run_agent(family, rewrite=True)
    joined = join_calls(calls)
    assert joined.splits == 1
    assert [c.calls for c in joined.chains] == [(0, 1), (2,)]
    assert not template_round_trip(tok, messages, calls).exact


def test_a_template_that_rewrites_earlier_turns_is_not_exact() -> None:
    """Qwen3-like: earlier assistant turns render differently once the conversation goes on."""
    rewriting = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['role'] == 'assistant' and not loop.last %}[earlier]{% else %}"
        "{{ m['content'] }}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    family = Family("rewriting", rewriting, FAMILIES[0].specials, "<|im_end|>")
    calls, messages, tok = run_agent(family)
    trip = template_round_trip(tok, messages, calls)
    assert trip.joined.splits == 2
    assert not trip.exact and trip.first_difference is not None
