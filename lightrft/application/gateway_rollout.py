"""``GatewayRolloutEngine``: episodes of a black-box agent program through an OpenAI-
compatible gateway, as one rollout engine.

Each of the ``sampling.n`` samples of a prompt is one episode: the agent program named in
the config is started (:class:`~lightrft.domain.gateway_calls.AgentLauncher`) with the
gateway's URL, a token of its own and the task; it calls ``/v1/chat/completions`` as often
as it likes; every call is sampled by the run's rollout engine (the trainer's, at the
current policy version: the count of weight syncs it received) on this thread, in batches
of the calls that are waiting. The episode ends when the program exits (``done``; a
non-zero status: ``agent_error``), or at its deadline, when its process group is killed
(``deadline``). Its calls are joined into trained rows
(:func:`~lightrft.domain.token_continuity.join_calls`): loss mask 1 exactly on the sampled ids,
a new row where the agent rewrote its history (counted).

Reward: ``reward="agent"``: what the program reported (``POST /v1/episodes/reward``, or a
number in its reward file), on the last sampled token (``missing_reward`` and counted when
it reported none); ``reward="sources"``: the configured reward sources score the final
answer (each row's ``text`` is the episode's last model turn).

Returned: one completion per episode first, prompt-major as the port says (the row holding
the episode's last call), then the episode's other rows (same ``prompt_index``, end reason
``history_rewritten``), which the trainer trains like any row and the evaluator ignores.
Every completion carries its own prompt ids (the agent's, not the dataset's rendering).
"""

from __future__ import annotations

import queue
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import structlog

from lightrft.application.engine_wrapper import EngineWrapper
from lightrft.application.gateway_session import (
    Exchange,
    GatewayEpisode,
    GatewaySession,
    PendingCall,
)
from lightrft.domain.gateway_calls import (
    AgentLaunch,
    AgentLauncher,
    AgentProcess,
    ChatChoice,
    ChatReply,
    ChoiceFinish,
    GatewayBackend,
    ToolCallOut,
)
from lightrft.domain.ports import NamedTensors, RolloutEngine
from lightrft.domain.row_metadata import PROMPT_CONTENT_KEY
from lightrft.domain.token_continuity import CallChain, RecordedCall, join_calls
from lightrft.domain.tool_calls import TOOL_CALL_FORMATS
from lightrft.domain.trajectory import Segment
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

log = structlog.get_logger(__name__)

POLL_S = 0.02  # how often the rollout looks at the agents and the call queue


@dataclass(frozen=True)
class GatewayParams:
    """The gateway's limits and reward mode (``rollout.agent.gateway``; docs/agents.md)."""

    episode_timeout_s: float = 300.0
    call_timeout_s: float = 60.0
    max_calls: int = 16
    reward: Literal["agent", "sources"] = "agent"
    missing_reward: float = 0.0
    temperature: Literal["run", "request"] = "run"
    tool_format: str = "hermes"
    straggler_wait_s: float = 0.05
    pass_reference: bool = False


ServerStarter = Callable[[GatewayBackend], str]
"""Starts the HTTP front end over a backend on loopback; returns its base URL."""


class GatewayRolloutEngine(EngineWrapper):
    """Agent-program episodes over ``engine`` (see the module docstring).

    Args:
        engine: samples every call (HF, vLLM, fake).
        session: the backend the HTTP front end serves.
        launcher: starts the agent program of an episode.
        start_server: starts the front end (once, on the first rollout).
        params: deadlines, limits, reward mode.
    """

    def __init__(
        self,
        engine: RolloutEngine,
        session: GatewaySession,
        launcher: AgentLauncher,
        start_server: ServerStarter,
        params: GatewayParams,
    ) -> None:
        self.engine, self.session, self.launcher = engine, session, launcher
        self.params = params
        self._start_server = start_server
        self.url: str | None = None
        self.policy_version = 0
        self.tool_format = TOOL_CALL_FORMATS.get(params.tool_format)
        self.last_episodes: list[GatewayEpisode] = []  # for tests and reports

    def load_weights(self, weights: NamedTensors) -> None:
        """Loads ``weights`` into the inner engine: the next calls sample a new version."""
        self.engine.load_weights(weights)
        self.policy_version += 1

    # --- one rollout ---------------------------------------------------------------------
    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` episodes per prompt (see the module docstring)."""
        if not prompts:
            return []
        if self.url is None:
            self.url = self._start_server(self.session)
        deadline = time.monotonic() + self.params.episode_timeout_s
        episodes = [
            GatewayEpisode(i * sampling.n + j, i, j, p, GatewaySession.new_token(), deadline)
            for i, p in enumerate(prompts)
            for j in range(sampling.n)
        ]
        self.last_episodes = episodes
        self.session.open_episodes(episodes)
        processes: dict[int, AgentProcess] = {}
        try:
            for e in episodes:
                started = self._launch(e)
                if started is not None:
                    processes[e.index] = started
            self._serve(episodes, processes, sampling)
        finally:
            for index, process in processes.items():
                if process.poll() is None:
                    process.kill()
                    episodes[index].end("deadline")
            self.session.close_all()
        return self._completions(episodes, sampling)

    def _launch(self, e: GatewayEpisode) -> AgentProcess | None:
        task: dict[str, object] = {
            "uid": e.prompt.uid,
            "sample": e.sample,
            "prompt": e.prompt.metadata.get(PROMPT_CONTENT_KEY, e.prompt.prompt_text),
        }
        if self.params.pass_reference:
            task["reference"] = e.prompt.reference
        launch = AgentLaunch(
            episode=f"{e.prompt.uid}#{e.sample}",
            base_url=f"{self.url}/v1",
            token=e.token,
            model=self.session.model_name,
            task=task,
            reward_file=f"reward-{e.index}.txt",
        )
        try:
            return self.launcher.start(launch)
        except OSError as error:
            log.warning("gateway.agent_start_failed", episode=launch.episode, error=repr(error))
            e.count("gateway/start_failures")
            e.end("agent_error")
            return None

    def _serve(
        self,
        episodes: list[GatewayEpisode],
        processes: dict[int, AgentProcess],
        sampling: SamplingParams,
    ) -> None:
        """Samples queued calls and watches the agents until every episode has ended."""
        running = dict(processes)
        while running:
            calls = self._take_calls()
            if calls:
                self._sample(calls, sampling)
            now = time.monotonic()
            for index, process in list(running.items()):
                e = episodes[index]
                status = process.poll()
                if status is not None:
                    del running[index]
                    self._finished(e, process, status)
                elif now >= e.deadline:
                    process.kill()
                    del running[index]
                    log.warning(
                        "gateway.agent_deadline",
                        episode=f"{e.prompt.uid}#{e.sample}",
                        problem="the agent program was still running at "
                        f"rollout.agent.gateway.episode_timeout_s={self.params.episode_timeout_s}s;"
                        " its process group was killed",
                    )
                    e.end("deadline")
                    with self.session.lock:
                        e.reward = e.reward if e.reward is not None else process.reward_from_file()

    def _take_calls(self) -> list[PendingCall]:
        """The calls waiting now (after the first, ``straggler_wait_s`` for more)."""
        try:
            first = self.session.pending.get(timeout=POLL_S)
        except queue.Empty:
            return []
        calls = [first]
        until = time.monotonic() + self.params.straggler_wait_s
        while True:
            left = until - time.monotonic()
            try:
                calls.append(
                    self.session.pending.get(timeout=left)
                    if left > 0
                    else self.session.pending.get_nowait()
                )
            except queue.Empty:
                return calls

    def _finished(self, e: GatewayEpisode, process: AgentProcess, status: int) -> None:
        with self.session.lock:
            if e.reward is None:
                e.reward = process.reward_from_file()
        if status == 0:
            e.end("done")
        else:
            log.warning(
                "gateway.agent_failed",
                episode=f"{e.prompt.uid}#{e.sample}",
                status=status,
                output=process.log_tail(),
            )
            e.end("agent_error")

    # --- sampling ------------------------------------------------------------------------
    def _sample(self, calls: list[PendingCall], sampling: SamplingParams) -> None:
        """One inner ``generate`` per distinct (n, max_tokens, temperature) of the calls."""
        groups: dict[tuple[int, int, float], list[PendingCall]] = {}
        for call in calls:
            groups.setdefault(self._call_key(call, sampling), []).append(call)
        for (n, max_tokens, temperature), group in groups.items():
            stops = sampling.stop_strings
            if any(c.request.tools for c in group):
                stops = tuple(dict.fromkeys((*stops, *self.tool_format.stop_strings)))
            call_sampling = replace(
                sampling,
                n=n,
                max_new_tokens=max_tokens,
                temperature=temperature,
                stop_strings=stops,
            )
            inputs = [
                PromptRecord(
                    uid=f"{c.episode.prompt.uid}/sample{c.episode.sample}/call{c.number}",
                    prompt_text="",
                    prompt_token_ids=c.prompt_ids,
                    reference=c.episode.prompt.reference,
                )
                for c in group
            ]
            completions = self.engine.generate(inputs, call_sampling)
            for k, call in enumerate(group):
                self._answer(call, completions[k * n : (k + 1) * n])

    def _call_key(self, call: PendingCall, sampling: SamplingParams) -> tuple[int, int, float]:
        request = call.request
        cap = sampling.max_new_tokens
        tokens = cap if request.max_tokens is None else min(request.max_tokens, cap)
        temperature = sampling.temperature
        if self.params.temperature == "request" and request.temperature is not None:
            temperature = request.temperature
        return request.n, tokens, temperature

    def _answer(self, call: PendingCall, completions: Sequence[Completion]) -> None:
        """Records the call's samples (unless it was abandoned) and wakes its HTTP thread."""
        e = call.episode
        records = [
            RecordedCall(
                call.prompt_ids,
                c.token_ids,
                c.logprobs,
                self.session.renderer.decode(c.token_ids),
                c.finish_reason,
                self.policy_version,
            )
            for c in completions
        ]
        choices = tuple(self._choice(r, bool(call.request.tools)) for r in records)
        reply = ChatReply(
            choices,
            prompt_tokens=len(call.prompt_ids),
            completion_tokens=sum(len(r.sampled_ids) for r in records),
            policy_version=self.policy_version,
            model=self.session.model_name,
        )
        with self.session.lock:
            if call.abandoned or not e.open:
                call.error = TimeoutError("the call was abandoned")
            else:
                e.calls.extend(records)
                e.count("tool_calls", sum(len(choice.tool_calls) for choice in choices))
                e.last = Exchange(
                    call.request.messages,
                    call.request.tools,
                    [
                        (_assistant_message(choice), r.prompt_ids, r.sampled_ids)
                        for choice, r in zip(choices, records, strict=True)
                    ],
                )
                call.reply = reply
            call.done.set()

    def _choice(self, record: RecordedCall, tools: bool) -> ChatChoice:
        text = record.text.strip()
        if tools:
            parsed = self.tool_format.parse(text)
            if parsed.calls:
                rest = _without_calls(text) if self.tool_format.name == "hermes" else ""
                calls = tuple(ToolCallOut(c.name, dict(c.arguments)) for c in parsed.calls)
                return ChatChoice(rest, calls, "tool_calls")
        finish: ChoiceFinish = "length" if record.finish_reason == "length" else "stop"
        return ChatChoice(text, (), finish)

    # --- trained rows --------------------------------------------------------------------
    def _completions(
        self, episodes: list[GatewayEpisode], sampling: SamplingParams
    ) -> list[Completion]:
        joined = {e.index: join_calls(e.calls) for e in episodes}
        fallback = self._fallback_rows(
            [e for e in episodes if not joined[e.index].chains], sampling
        )
        finals: list[Completion] = []
        extras: list[Completion] = []
        for e in episodes:
            rows = joined[e.index].chains or (fallback[e.index],)
            last = _row_of_last_call(rows, e.calls)
            reward = self._reward(e)
            answer = rows[last].text
            e.count("gateway/calls", len(e.calls))
            e.count("gateway/rows", len(rows))
            e.count("gateway/history_rewrites", joined[e.index].splits)
            e.count("gateway/policy_version", self.policy_version)
            for k, row in enumerate(rows):
                final = k == last
                completion = _row_completion(
                    e,
                    row,
                    answer,
                    reward,
                    final,
                    own_prompt=bool(joined[e.index].chains),
                )
                (finals if final else extras).append(completion)
        return finals + extras

    def _reward(self, e: GatewayEpisode) -> float | None:
        if self.params.reward != "agent":
            return None
        if e.reward is None:
            e.count("gateway/no_reward")
            return self.params.missing_reward
        return e.reward

    def _fallback_rows(
        self, episodes: list[GatewayEpisode], sampling: SamplingParams
    ) -> dict[int, CallChain]:
        """One model turn on the dataset's prompt for each episode that made no call (every
        sample needs a trained response; ``gateway/no_calls`` counts them)."""
        if not episodes:
            return {}
        inputs = [
            replace(e.prompt, uid=f"{e.prompt.uid}/sample{e.sample}/fallback") for e in episodes
        ]
        completions = self.engine.generate(inputs, replace(sampling, n=1))
        rows = {}
        for e, c in zip(episodes, completions, strict=True):
            e.count("gateway/no_calls")
            segment = Segment(c.token_ids, c.text, True, c.logprobs)
            rows[e.index] = CallChain((), e.prompt.prompt_token_ids, (segment,))
        return rows


def _row_of_last_call(rows: Sequence[CallChain], calls: Sequence[RecordedCall]) -> int:
    """The index of the row that ends with the episode's last call (its final answer)."""
    if not calls:
        return len(rows) - 1
    ending = calls[-1].context
    for k in range(len(rows) - 1, -1, -1):
        if rows[k].prompt_ids + rows[k].token_ids == ending:
            return k
    return len(rows) - 1


def _row_completion(
    e: GatewayEpisode,
    row: CallChain,
    answer: str,
    reward: float | None,
    final: bool,
    *,
    own_prompt: bool,
) -> Completion:
    turns = sum(1 for s in row.segments if s.trained)
    turn_rewards = () if reward is None else (*(0.0,) * (turns - 1), reward)
    reason = (e.end_reason or "done") if final else "history_rewritten"
    episode = row.episode(turn_rewards, reason, e.counters if final else None)
    return Completion(
        prompt_index=e.prompt_index,
        token_ids=episode.token_ids,
        text=answer,
        finish_reason="stop" if reason == "done" else "length",
        logprobs=episode.logprobs,
        loss_mask=episode.loss_mask,
        episode=episode,
        prompt_token_ids=row.prompt_ids if own_prompt else None,
    )


def _assistant_message(choice: ChatChoice) -> dict[str, object]:
    """The assistant message of ``choice`` as the agent is expected to echo it."""
    message: dict[str, object] = {"role": "assistant", "content": choice.text or None}
    if choice.tool_calls:
        message["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": dict(c.arguments)}}
            for c in choice.tool_calls
        ]
    return message


def _without_calls(text: str) -> str:
    """``text`` with its ``<tool_call>`` blocks removed (the content beside the calls)."""
    return re.sub(r"<tool_call>.*?</tool_call>", "", text, flags=re.DOTALL).strip()
