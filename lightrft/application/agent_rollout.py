"""``AgentRolloutEngine``: multi-turn episodes through any rollout engine, as one engine.

It implements the :class:`~lightrft.domain.ports.RolloutEngine` port, so the experience
maker, the evaluator and the cycle run multi-turn episodes unchanged: each of the
``sampling.n`` samples of a prompt is one episode, returned as one
:class:`~lightrft.domain.types.Completion` whose ``loss_mask`` is 1 on generated tokens
only (see :mod:`lightrft.domain.trajectory`).

Scheduling: every episode whose environment has answered is in the next ``generate`` call
of the inner engine (one batch, ``n=1`` per episode); each model turn then goes to its
episode's environment on a thread of its own, with a deadline. The next batch starts as soon
as the first environment step is back plus ``straggler_wait_s``, so a slow environment
delays only its own episode. Sampling seeds are per episode and turn (the uid of a turn's
input is ``<prompt uid>/sample<j>/turn<t>``), so an engine that seeds rows by uid (HF)
gives the same episodes whatever the batching.

What an environment answers is untrusted (:mod:`~lightrft.application.env_answers`): an
answer that cannot be used ends its episode ``env_invalid`` (counted as
``agent/env_invalid_answers``, logged ``agent.env_invalid`` naming the environment), an
observation over ``max_observation_tokens`` ends it ``observation_too_long``; the other
episodes go on. An environment that fails for most episodes of several rollouts in a row
stops the run (:mod:`~lightrft.application.env_failures`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import structlog

from lightrft.application.deadline_calls import CallPool, CallResult
from lightrft.application.engine_wrapper import EngineWrapper
from lightrft.application.env_answers import (
    first_input_problem,
    observation_chars_problem,
    outcome_problem,
)
from lightrft.application.env_failures import EnvironmentFailureMonitor
from lightrft.application.episode_state import EpisodeLimits, EpisodeState
from lightrft.application.params import AgentParams
from lightrft.domain.agent import (
    AgentTimeoutError,
    EnvironmentFactory,
    EpisodeTurnEngine,
    MediaTurnRenderer,
    ObservationMediaError,
    StepOutcome,
    TurnRenderer,
)
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.trajectory import EndReason
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

log = structlog.get_logger(__name__)

CallKind = Literal["reset", "step"]


class AgentRolloutEngine(EngineWrapper):
    """Multi-turn rollouts over ``engine`` with one environment per episode.

    Args:
        engine: generates each turn (HF, vLLM, SGLang, fake).
        environments: builds a fresh environment for each episode.
        renderer: renders observations with the model's chat template.
        params: turn, token and time limits (:class:`AgentParams`).
    """

    def __init__(
        self,
        engine: RolloutEngine,
        environments: EnvironmentFactory,
        renderer: TurnRenderer,
        params: AgentParams,
    ) -> None:
        self.engine, self.environments, self.renderer = engine, environments, renderer
        self.params = params
        self.generate_calls = 0  # inner-engine batches of the last generate()
        self._rollouts = 0  # generate() calls so far (names the episodes' cache handles)
        self.failures = EnvironmentFailureMonitor(
            params.environment,
            enabled=params.stop_on_env_failures,
            threshold=params.env_failure_threshold,
            patience=params.env_failure_patience,
        )

    # --- episodes ----------------------------------------------------------------------
    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` episodes per prompt, grouped: prompt i owns [i*n, (i+1)*n)."""
        if not prompts:
            return []
        start = time.monotonic()
        p = self.params
        limits = EpisodeLimits(
            p.max_turns,
            p.max_response_tokens,
            start + p.episode_timeout_s,
            max_observation_tokens=p.max_observation_tokens,
            max_abs_reward=p.max_abs_reward,
            max_counter_keys=p.max_counter_keys,
            vocab_size=p.vocab_size,
        )
        episodes = [
            EpisodeState(i * sampling.n + j, i, j, p, self.environments(), limits)
            for i, p in enumerate(prompts)
            for j in range(sampling.n)
        ]
        turn_sampling = replace(
            sampling,
            n=1,
            stop_strings=tuple(dict.fromkeys((*sampling.stop_strings, *self.params.stop_strings))),
        )
        calls: CallPool[tuple[int, CallKind]] = CallPool("environment")
        self.generate_calls = 0
        self._rollouts += 1
        try:
            for e in episodes:
                self._start(calls, e, "reset")
            ready: list[EpisodeState] = []
            while calls.pending or ready:
                if ready:
                    self._turn(calls, ready, turn_sampling)
                    ready = []
                if calls.pending:
                    results, expired = calls.collect(self.params.straggler_wait_s)
                    ready = self._receive(episodes, results, expired)
        finally:
            self._close_all(episodes)
            if isinstance(self.engine, EpisodeTurnEngine):  # their KV caches, if any
                self.engine.release_episodes([self._handle(e) for e in episodes])
        log.debug(
            "agent.rollout.done",
            episodes=len(episodes),
            batches=self.generate_calls,
            seconds=round(time.monotonic() - start, 3),
        )
        self.failures.observe([e.end_reason for e in episodes])
        return [e.completion() for e in episodes]

    def _start(
        self, calls: CallPool[tuple[int, CallKind]], e: EpisodeState, kind: CallKind
    ) -> None:
        deadline = min(time.monotonic() + self.params.step_timeout_s, e.limits.deadline)
        if kind == "reset":
            calls.start((e.index, kind), deadline, lambda: e.env.reset(e.prompt))
        else:
            action = e.last_action
            assert action is not None, "a step follows a generated turn"
            calls.start((e.index, kind), deadline, lambda: e.env.step(action))

    def _turn(
        self,
        calls: CallPool[tuple[int, CallKind]],
        ready: list[EpisodeState],
        sampling: SamplingParams,
    ) -> None:
        """Generates one turn for every ready episode (one inner batch per turn budget)."""
        by_budget: dict[int, list[EpisodeState]] = {}
        for e in ready:
            budget = e.remaining_tokens(sampling.max_new_tokens)
            if e.turns > 0 and (budget < 1 or time.monotonic() >= e.limits.deadline):
                e.end("token_budget" if budget < 1 else "deadline")
                continue
            by_budget.setdefault(max(budget, 1), []).append(e)
        for budget, group in by_budget.items():
            inputs = [e.next_input() for e in group]
            self.generate_calls += 1
            turn_sampling = replace(sampling, max_new_tokens=budget)
            if isinstance(self.engine, EpisodeTurnEngine):
                handles = [self._handle(e) for e in group]
                completions = self.engine.generate_turns(inputs, turn_sampling, handles)
            else:
                completions = self.engine.generate(inputs, turn_sampling)
            for e, completion in zip(group, completions, strict=True):
                e.add_turn(completion)
                if e.end_reason is not None:  # its environment failed to reset: one turn
                    continue
                if completion.finish_reason == "length":
                    capped = budget < sampling.max_new_tokens
                    e.end("token_budget" if capped else "length")
                else:
                    self._start(calls, e, "step")

    def _handle(self, e: EpisodeState) -> str:
        """The episode's handle for an engine that keeps state between its turns."""
        return f"{id(self):x}/{self._rollouts}/{e.index}"

    def _receive(
        self,
        episodes: list[EpisodeState],
        results: list[CallResult[tuple[int, CallKind]]],
        expired: list[tuple[int, CallKind]],
    ) -> list[EpisodeState]:
        """Applies the environment's answers; returns the episodes ready for a turn."""
        ready: list[EpisodeState] = []
        for index, kind in expired:
            e = episodes[index]
            if time.monotonic() >= e.limits.deadline:  # the episode's time is up, not the call's
                e.end("deadline")
                if kind == "reset":
                    ready.append(e)  # one turn still, every episode has a response
                continue
            error = AgentTimeoutError(
                f"environment {kind} of episode {e.prompt.uid}#{index} gave no answer within "
                f"rollout.agent.step_timeout_s={self.params.step_timeout_s}s"
            )
            log.warning("agent.env_timeout", episode=index, call=kind, error=str(error))
            e.count("env_timeouts")
            self._after_failure(e, kind, ready)
        for result in results:
            index, kind = result.key
            e = episodes[index]
            if result.error is not None:
                log.warning(
                    "agent.env_error",
                    environment=self.params.environment,
                    episode=index,
                    call=kind,
                    error=repr(result.error),
                )
                e.count("env_errors")
                self._after_failure(e, kind, ready)
                continue
            problem = self._problem(e, kind, result.value)
            if problem is not None:
                log.warning(
                    "agent.env_invalid",
                    environment=self.params.environment,
                    episode=index,
                    call=kind,
                    problem=problem,
                )
                e.count("env_invalid_answers")
                self._after_failure(e, kind, ready, "env_invalid")
            elif kind == "reset":
                assert isinstance(result.value, PromptRecord)
                e.first_input = result.value
                ready.append(e)
            else:
                assert isinstance(result.value, StepOutcome)
                self._after_step(e, result.value, ready)
        return ready

    def _problem(self, e: EpisodeState, kind: CallKind, value: object) -> str | None:
        """What makes an environment's answer unusable, or ``None``."""
        lim = e.limits
        if kind == "reset":
            return first_input_problem(value, e.prompt, lim.vocab_size, lim.max_observation_tokens)
        return outcome_problem(value, e.counter_keys(), lim.max_abs_reward, lim.max_counter_keys)

    def _after_failure(
        self,
        e: EpisodeState,
        kind: CallKind,
        ready: list[EpisodeState],
        reason: EndReason = "env_error",
    ) -> None:
        """A failed reset still gets one turn on the prompt itself (every episode has a
        response); a failed step ends the episode."""
        e.end(reason)
        if kind == "reset" and e.turns == 0:
            ready.append(e)

    def _after_step(self, e: EpisodeState, outcome: StepOutcome, ready: list[EpisodeState]) -> None:
        e.add_outcome(outcome)
        if outcome.done:
            e.end("done")
        elif e.turns >= e.limits.max_turns:
            e.end("max_turns")
        elif time.monotonic() >= e.limits.deadline:
            e.end("deadline")
        else:
            too_long = observation_chars_problem(outcome, e.limits.max_observation_tokens)
            try:
                ids, media = ((), None) if too_long else self._render(e, outcome)
            except ObservationMediaError as error:
                log.warning(
                    "agent.env_invalid",
                    environment=self.params.environment,
                    episode=e.index,
                    call="step",
                    problem=str(error),
                )
                e.count("env_invalid_answers")
                e.end("env_invalid")
                return
            if too_long is None and len(ids) > e.limits.max_observation_tokens:
                too_long = (
                    f"observation of {len(ids)} tokens, more than "
                    f"rollout.agent.max_observation_tokens={e.limits.max_observation_tokens}"
                )
            if too_long is not None:
                log.warning(
                    "agent.observation_too_long",
                    environment=self.params.environment,
                    episode=e.index,
                    problem=too_long,
                )
                e.end("observation_too_long")
                return
            budget = e.limits.max_response_tokens
            if budget is not None and e.response_tokens + len(ids) >= budget:
                e.end("token_budget")
                return
            e.add_observation(ids, self.renderer.decode(ids), media)
            ready.append(e)

    def _render(self, e: EpisodeState, outcome: StepOutcome) -> tuple[tuple[int, ...], Any]:
        """The observation's ids, and the episode's media with its images (``None``: it has
        none). Images for a renderer that reads text only are a configuration error."""
        generated = e.segments[-1].token_ids
        if not any(m.images for m in outcome.observation):
            return self.renderer.observation_ids(outcome.observation, generated), None
        if not isinstance(self.renderer, MediaTurnRenderer):
            raise ValueError(
                f"environment {self.params.environment} returned an image in an observation, "
                "but the policy reads text only; use a vision-language model "
                "(model.modality=vision-language) or an environment that answers in text"
            )
        where = f"episode {e.prompt.uid}#{e.index}"
        return self.renderer.observation_media(
            outcome.observation, generated, e.current_media(), where
        )

    def _close_all(self, episodes: list[EpisodeState]) -> None:
        """Closes every environment, each within ``step_timeout_s``; a close that fails or
        hangs is logged (``agent.env_close_failed``) and left behind."""
        closes: CallPool[int] = CallPool("environment-close")
        deadline = time.monotonic() + self.params.step_timeout_s
        for e in episodes:
            closes.start(e.index, deadline, e.env.close)
        while closes.pending:
            results, expired = closes.collect(linger_s=self.params.step_timeout_s)
            for result in results:
                if result.error is not None:
                    log.warning(
                        "agent.env_close_failed", episode=result.key, error=repr(result.error)
                    )
            for index in expired:
                log.warning("agent.env_close_failed", episode=index, error="timeout")
