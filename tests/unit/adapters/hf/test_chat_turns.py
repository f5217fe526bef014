"""Token-in, token-out: a multi-turn trajectory (prompt ids, generated ids kept as generated,
observation ids rendered once by ``HfTurnRenderer``) equals the chat template applied to the
whole conversation, for each shipped template family, where the template is prefix-stable;
and the places where it is not are pinned down."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lightrft.adapters.hf.chat_turns import HfTurnRenderer, TemplateNotPrefixStableError
from lightrft.domain.agent import ChatMessage, ToolSpec
from tests.unit.adapters.hf.chat_templates import FAMILIES, Family, family_tokenizer

CALC = ToolSpec("calculator", "arithmetic", {"type": "object", "properties": {}})


def call(expression: str) -> str:
    payload = json.dumps({"name": "calculator", "arguments": {"expression": expression}})
    return f"<tool_call>\n{payload}\n</tool_call>"


# (assistant content, the messages that answer it); the last turn is the final answer
EPISODES: dict[str, list[tuple[str, list[ChatMessage]]]] = {
    "one_call": [
        (call("12 * 34"), [ChatMessage("tool", "408", "calculator")]),
        ("The answer is 408.", []),
    ],
    "two_calls_and_an_error": [
        (call("1 / 0"), [ChatMessage("tool", "error: division by zero", "calculator")]),
        (
            "Let me retry." + call("1234 * 5678") + call("2 + 2"),
            [ChatMessage("tool", "7006652", "calculator"), ChatMessage("tool", "4", "calculator")],
        ),
        ("So 7006652.", []),
    ],
    "user_follow_up": [
        ("It is 45.", [ChatMessage("user", "Are you sure? print(sum(range(10)))")]),
        ("Yes, 45.", []),
    ],
}


def as_dict(m: ChatMessage) -> dict[str, Any]:
    return {"role": m.role, "content": m.content}


def trajectory(
    family: Family,
    turns: list[tuple[str, list[ChatMessage]]],
    close_turns: bool,
    tools: bool,
    tok: Any = None,
) -> tuple[list[int], list[int], str]:
    """(trajectory ids, loss mask, whole-conversation text) for a scripted episode: each
    model turn is its content's ids, plus the end-of-turn id when ``close_turns`` (or for
    the final answer), as an engine stopping at EOS or at ``</tool_call>`` would give."""
    tok = tok if tok is not None else family_tokenizer(family)
    specs = (CALC,) if tools else ()
    renderer = HfTurnRenderer(tok, tools=specs)
    template_tools = renderer.tools
    conversation: list[dict[str, Any]] = [
        {"role": "user", "content": "What is 1234 * 5678? Use the calculator."}
    ]
    prompt = tok.apply_chat_template(
        conversation, tools=template_tools, add_generation_prompt=True, tokenize=False
    )
    ids = list(tok.encode(prompt, add_special_tokens=False))
    mask = [0] * len(ids)
    eot = tok.convert_tokens_to_ids(family.end_of_turn)
    for index, (content, answer) in enumerate(turns):
        generated = list(tok.encode(content, add_special_tokens=False))
        if close_turns or index == len(turns) - 1:
            generated.append(eot)
        ids += generated
        mask += [1] * len(generated)
        conversation.append({"role": "assistant", "content": content})
        if answer:
            observation = renderer.observation_ids(answer, generated)
            ids += observation
            mask += [0] * len(observation)
            conversation += [as_dict(m) for m in answer]
    whole = tok.apply_chat_template(conversation, tools=template_tools, tokenize=False)
    return ids, mask, str(whole)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("episode", sorted(EPISODES))
@pytest.mark.parametrize("close_turns", [True, False], ids=["eos", "stop_string"])
@pytest.mark.parametrize("tools", [False, True], ids=["no_tools", "tools"])
def test_trajectory_ids_equal_the_template_on_the_whole_conversation(
    family: Family, episode: str, close_turns: bool, tools: bool
) -> None:
    tok = family_tokenizer(family)
    ids, mask, whole = trajectory(family, EPISODES[episode], close_turns, tools)
    expected = tok.encode(whole, add_special_tokens=False)
    renderer = HfTurnRenderer(tok)
    tail = tok.encode(renderer.turn_tail, add_special_tokens=False)[1:]  # after end-of-turn
    # the whole conversation = the trajectory + what the template writes after the final
    # end-of-turn token ("\n" for ChatML, nothing for Llama 3)
    assert ids + tail == expected
    assert len(mask) == len(ids)
    generated = [t for t, m in zip(ids, mask, strict=True) if m]
    contents = "".join(
        tok.decode(tok.encode(c, add_special_tokens=False)) for c, _ in EPISODES[episode]
    )
    assert tok.decode(generated, skip_special_tokens=True).replace("\n", "") == contents.replace(
        "\n", ""
    )


def test_qwen_merges_a_steps_tool_results_so_they_must_be_rendered_together() -> None:
    """Not prefix-stable across messages: Qwen2.5 closes a run of tool messages with one
    ``<|im_end|>``; rendering the two results of one step one at a time gives other text."""
    family = next(f for f in FAMILIES if f.name == "qwen2.5")
    renderer = HfTurnRenderer(family_tokenizer(family))
    a, b = ChatMessage("tool", "1", "calculator"), ChatMessage("tool", "2", "calculator")
    together = renderer.observation_text([a, b], [5])
    apart = renderer.observation_text([a], [5]) + renderer.observation_text([b], [5])
    assert together != apart
    assert together.count("<|im_start|>user") == 1


def test_generated_ids_are_kept_even_when_retokenizing_would_differ() -> None:
    """A model may generate a non-canonical tokenization ("408" as three digit tokens where
    the tokenizer merges them). The trajectory keeps the generated ids; re-tokenizing the
    conversation (what a text-based agent loop does) would train other tokens."""
    family = FAMILIES[0]
    tok = family_tokenizer(family)
    canonical = tok.encode("408", add_special_tokens=False)
    spelled = [tok.convert_tokens_to_ids(c) for c in "408"]
    assert len(canonical) < len(spelled)  # the trained BPE merges the digits
    assert tok.decode(spelled) == tok.decode(canonical)


def test_a_template_that_rewrites_earlier_turns_is_refused() -> None:
    """Templates that render an assistant turn differently once something follows it (e.g.
    one that drops earlier turns' reasoning, like Qwen3's) cannot be rendered
    incrementally; the renderer says so instead of producing mismatched ids."""
    family = FAMILIES[0]
    tok = family_tokenizer(family)
    rewriting = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['role'] == 'assistant' and not loop.last %}[earlier]{% else %}"
        "{{ m['content'] }}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    renderer = HfTurnRenderer(tok, chat_template=rewriting)
    with pytest.raises(TemplateNotPrefixStableError, match="renders the assistant turn"):
        renderer.observation_ids([ChatMessage("tool", "4")], [5])


def test_end_of_turn_token_is_found_per_family() -> None:
    for family in FAMILIES:
        tok = family_tokenizer(family)
        renderer = HfTurnRenderer(tok)
        assert renderer.end_of_turn_id == tok.convert_tokens_to_ids(family.end_of_turn)


@pytest.mark.parametrize("episode", sorted(EPISODES))
@pytest.mark.parametrize("close_turns", [True, False], ids=["eos", "stop_string"])
def test_the_embedded_smollm2_tokenizer_is_prefix_stable(episode: str, close_turns: bool) -> None:
    """The same check with the embedded model's own tokenizer and template (its real BPE
    merges), when the model is in the local cache (``lightrft demo`` puts it there)."""
    from lightrft.adapters.hf.default_model import DEFAULT_MODEL_NAME, cache_dir

    path = cache_dir() / DEFAULT_MODEL_NAME
    if not (path / "tokenizer.json").exists():
        pytest.skip(f"the embedded model is not converted yet ({path})")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    family = Family("smollm2-real", tok.chat_template, (), tok.eos_token)
    ids, mask, whole = trajectory(family, EPISODES[episode], close_turns, False, tok)
    renderer = HfTurnRenderer(tok)
    assert renderer.end_of_turn_id == tok.convert_tokens_to_ids("<|im_end|>")
    tail = tok.encode(renderer.turn_tail, add_special_tokens=False)[1:]
    assert ids + tail == tok.encode(whole, add_special_tokens=False)
    assert len(mask) == len(ids)
