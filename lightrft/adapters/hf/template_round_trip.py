"""The chat-template round trip of a multi-turn transcript, checked against recorded ids.

An agent loop that renders its conversation with the chat template at every call (a
black-box agent behind an OpenAI-compatible endpoint does) is token-exact only when the
template, applied to the whole transcript, gives exactly the first call's prompt followed by
every sampled and observation id the calls recorded
(:func:`~lightrft.domain.token_continuity.join_calls`). :func:`template_round_trip` renders
the transcript and compares; ``RoundTrip.exact`` says whether it matched and
``first_difference`` where it did not. Where it does not match, the calls do not chain either
(a later prompt would be that rendering), and the episode is split into chains rather than
re-tokenized. ``docs/agents.md`` ("Exact tokens across turns") lists the families tested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.domain.agent import ToolSpec
from lightrft.domain.token_continuity import JoinedCalls, RecordedCall, first_difference, join_calls


@dataclass(frozen=True)
class RoundTrip:
    """The recorded ids of a transcript's calls against the template's rendering of it.

    ``recorded``: the first call's prompt followed by every sampled and observation id of
    the calls that chain with it (all of them when the episode is token-exact); ``rendered``: the template applied to the
    whole transcript, tokenized; ``tail``: what the template writes after the final model
    turn that the model did not generate (``"\\n"`` after ChatML's ``<|im_end|>``).
    """

    recorded: tuple[int, ...]
    rendered: tuple[int, ...]
    tail: tuple[int, ...]
    joined: JoinedCalls

    @property
    def exact(self) -> bool:
        """The calls chain and the rendering is the recorded ids (plus the template's tail)."""
        return self.joined.splits == 0 and self.rendered == self.recorded + self.tail

    @property
    def first_difference(self) -> int | None:
        """The first position where rendering and recorded ids (+ tail) differ."""
        return first_difference(self.recorded + self.tail, self.rendered)


def template_round_trip(
    tokenizer: PreTrainedTokenizerBase,
    messages: Sequence[Mapping[str, Any]],
    calls: Sequence[RecordedCall],
    *,
    tools: Sequence[ToolSpec] = (),
    chat_template: str | None = None,
) -> RoundTrip:
    """Renders ``messages`` (the whole transcript, ending with the last model turn) with the
    tokenizer's chat template (or ``chat_template``) and compares it with ``calls``."""
    if not calls:
        raise ValueError("template_round_trip needs at least one recorded call")
    renderer = HfTurnRenderer(tokenizer, tools=tools, chat_template=chat_template)
    text = tokenizer.apply_chat_template(
        [dict(m) for m in messages],
        tools=renderer.tools,
        chat_template=chat_template,
        tokenize=False,
    )
    rendered = tuple(tokenizer.encode(str(text), add_special_tokens=False))
    last = calls[-1]
    closed = bool(last.sampled_ids) and last.sampled_ids[-1] == renderer.end_of_turn_id
    tail_ids = tuple(tokenizer.encode(renderer.turn_tail, add_special_tokens=False))
    tail = tail_ids[1:] if closed and renderer.end_of_turn_id is not None else tail_ids
    joined = join_calls(calls)
    if not joined.chains:
        raise ValueError("template_round_trip needs a recorded call that sampled at least one id")
    first = joined.chains[0]
    return RoundTrip(first.prompt_ids + first.token_ids, rendered, tail, joined)
