"""The rollout gateway's backend: per-episode tokens, prompt rendering, the call queue.

The HTTP front end (:mod:`lightrft.adapters.gateway.server`) calls :class:`GatewaySession`
on its own threads; the model is only ever run by the rollout's thread
(:class:`~lightrft.application.gateway_rollout.GatewayRolloutEngine`), which takes the
queued calls in batches. A call waits for its answer until its deadline (the per-call
limit, or the episode's deadline if sooner) and then fails with a
:class:`~lightrft.domain.gateway_calls.GatewayCallTimeoutError` naming both; a sample that
arrives after that is dropped, not recorded (the agent never saw it).

Prompt ids: when a request's messages are the previous request's messages, then the
assistant message the gateway answered (as sent: content and tool calls compared by value),
then only non-assistant messages (tool results, a user turn), the prompt is the previous
prompt ids, the sampled ids and the new messages rendered incrementally
(:meth:`ChatRenderer.observation_ids`): token-exact, the sampled ids never re-tokenised.
Any other request is rendered whole with the chat template; its call then starts a new
trained row (:func:`~lightrft.domain.token_continuity.join_calls`).
"""

from __future__ import annotations

import json
import queue
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightrft.domain.gateway_calls import (
    ChatRenderer,
    ChatReply,
    ChatRequest,
    GatewayAuthError,
    GatewayCallTimeoutError,
    GatewayLimitError,
)
from lightrft.domain.token_continuity import RecordedCall
from lightrft.domain.trajectory import EndReason
from lightrft.domain.types import PromptRecord


@dataclass
class Exchange:
    """The last answered request of an episode: what the next one may continue."""

    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]
    choices: list[tuple[Mapping[str, Any], tuple[int, ...], tuple[int, ...]]]
    # (the assistant message sent back, the prompt ids, the sampled ids) per choice


@dataclass
class GatewayEpisode:
    """One episode of an agent program, owned by the rollout; calls arrive on server threads
    and are recorded under the session's lock."""

    index: int  # row of the episode in the request batch (prompt-major)
    prompt_index: int
    sample: int
    prompt: PromptRecord
    token: str
    deadline: float  # monotonic seconds
    calls: list[RecordedCall] = field(default_factory=list)
    requests: int = 0  # calls accepted (answered or not)
    last: Exchange | None = None
    reward: float | None = None
    end_reason: EndReason | None = None
    open: bool = True  # accepting calls
    counters: dict[str, float] = field(default_factory=dict)

    def count(self, key: str, amount: float = 1.0) -> None:
        self.counters[key] = self.counters.get(key, 0.0) + amount

    def end(self, reason: EndReason) -> None:
        """Closes the episode to calls (the first reason wins)."""
        self.open = False
        if self.end_reason is None:
            self.end_reason = reason


@dataclass
class PendingCall:
    """A call waiting for the rollout's thread to sample it."""

    episode: GatewayEpisode
    request: ChatRequest
    prompt_ids: tuple[int, ...]
    number: int  # the episode's call number (names its sampling seed)
    done: threading.Event = field(default_factory=threading.Event)
    reply: ChatReply | None = None
    error: Exception | None = None
    abandoned: bool = False  # its deadline passed: a late sample is not recorded


class GatewaySession:
    """The :class:`~lightrft.domain.gateway_calls.GatewayBackend` of the rollout gateway.

    Args:
        renderer: the model family's chat template.
        model_name: what ``/v1/models`` lists.
        call_timeout_s: deadline of one model call.
        max_calls: model calls an episode may make; the next is refused (HTTP 429) and the
            episode ends ``max_calls``.
        max_choices: largest ``n``.
        max_prompt_tokens: longest rendered prompt (``None``: unchecked).
    """

    def __init__(
        self,
        renderer: ChatRenderer,
        *,
        model_name: str = "policy",
        call_timeout_s: float = 60.0,
        max_calls: int = 16,
        max_choices: int = 8,
        max_prompt_tokens: int | None = None,
    ) -> None:
        self.renderer = renderer
        self._model_name = model_name
        self.call_timeout_s, self.max_calls = call_timeout_s, max_calls
        self.max_choices, self.max_prompt_tokens = max_choices, max_prompt_tokens
        self.lock = threading.Lock()
        self.pending: queue.Queue[PendingCall] = queue.Queue()
        self._by_token: dict[str, GatewayEpisode] = {}

    # --- the rollout's side ---------------------------------------------------------------
    def open_episodes(self, episodes: Sequence[GatewayEpisode]) -> None:
        """Makes the episodes' tokens valid (and every other token invalid)."""
        with self.lock:
            self._by_token = {e.token: e for e in episodes}

    def close_all(self) -> None:
        """Invalidates every token; calls still queued are answered with an error."""
        with self.lock:
            for e in self._by_token.values():
                e.open = False
            self._by_token = {}
        while True:
            try:
                call = self.pending.get_nowait()
            except queue.Empty:
                return
            call.error = GatewayAuthError("the episode is over")
            call.done.set()

    @staticmethod
    def new_token() -> str:
        """A fresh episode token."""
        return "lrft-" + secrets.token_urlsafe(24)

    # --- GatewayBackend -------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        """The name ``/v1/models`` lists and replies carry."""
        return self._model_name

    def check_token(self, token: str) -> None:
        """Raises :class:`GatewayAuthError` unless ``token`` is a running episode's."""
        self._episode(token)

    def report_reward(self, token: str, reward: float) -> None:
        """Records the episode's reward (the last report wins)."""
        episode = self._episode(token)
        with self.lock:
            episode.reward = float(reward)

    def complete(self, token: str, request: ChatRequest) -> ChatReply:
        """Queues the call for the rollout's thread and waits for its reply."""
        episode = self._episode(token)
        if request.n > self.max_choices:
            raise GatewayLimitError(
                f"n={request.n} is more than rollout.agent.gateway.max_choices={self.max_choices}",
                400,
            )
        with self.lock:
            if episode.requests >= self.max_calls:
                episode.end("max_calls")
                raise GatewayLimitError(
                    f"episode {episode.prompt.uid}#{episode.sample} made more than "
                    f"rollout.agent.gateway.max_calls={self.max_calls} model calls"
                )
            episode.requests += 1
            number = episode.requests
        prompt_ids = self._prompt_ids(episode, request)
        if self.max_prompt_tokens is not None and len(prompt_ids) > self.max_prompt_tokens:
            raise GatewayLimitError(
                f"the conversation renders to {len(prompt_ids)} tokens, more than the "
                f"{self.max_prompt_tokens} the model's context leaves for a prompt",
                400,
            )
        call = PendingCall(episode, request, prompt_ids, number)
        self.pending.put(call)
        wait_s = min(self.call_timeout_s, episode.deadline - time.monotonic())
        if not call.done.wait(max(wait_s, 0.0)):
            with self.lock:
                if not call.done.is_set():
                    call.abandoned = True
                    episode.count("gateway/call_timeouts")
            if call.abandoned:
                raise GatewayCallTimeoutError(
                    f"model call {number} of episode {episode.prompt.uid}#{episode.sample} "
                    f"got no sample within {max(wait_s, 0.0):.1f}s "
                    f"(rollout.agent.gateway.call_timeout_s={self.call_timeout_s}, or the "
                    "episode's deadline)"
                )
        if call.error is not None:
            raise call.error
        assert call.reply is not None
        return call.reply

    def _episode(self, token: str) -> GatewayEpisode:
        with self.lock:
            episode = self._by_token.get(token)
            if episode is None or not episode.open:
                raise GatewayAuthError("missing, wrong or expired episode token")
            return episode

    # --- prompt ids -----------------------------------------------------------------------
    def _prompt_ids(self, episode: GatewayEpisode, request: ChatRequest) -> tuple[int, ...]:
        with self.lock:
            last = episode.last
        if last is not None:
            continued = _continuation(last, request)
            if continued is not None:
                prompt, sampled, new = continued
                return prompt + sampled + self.renderer.observation_ids(new, sampled, last.tools)
        return self.renderer.prompt_ids(request.messages, request.tools)


def _continuation(
    last: Exchange, request: ChatRequest
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[Mapping[str, Any], ...]] | None:
    """(prompt ids, sampled ids, new messages) of the choice ``request`` continues, or None."""
    k = len(last.messages)
    messages = request.messages
    if request.tools != last.tools or len(messages) < k + 2 or messages[:k] != last.messages:
        return None
    new = messages[k + 1 :]
    if any(m.get("role") == "assistant" for m in new):
        return None
    for sent, prompt, sampled in last.choices:
        if same_assistant_message(messages[k], sent):
            return prompt, sampled, new
    return None


def same_assistant_message(given: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """Whether the agent's echo of an assistant message is the one the gateway sent: the
    same content (``None`` and ``""`` alike) and the same tool calls (name and arguments as
    JSON values; call ids and argument formatting may differ)."""
    if given.get("role") != "assistant":
        return False
    if (given.get("content") or "") != (sent.get("content") or ""):
        return False
    return _calls(given) == _calls(sent)


def _calls(message: Mapping[str, Any]) -> list[tuple[Any, Any]] | None:
    out = []
    for call in message.get("tool_calls") or ():
        if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
            return None
        function = call["function"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return None
        out.append((function.get("name"), arguments))
    return out
