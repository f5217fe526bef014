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
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import structlog

from lightrft.application.deadline_calls import CallPool, CallResult
from lightrft.application.engine_wrapper import EngineWrapper
from lightrft.application.episode_state import EpisodeLimits, EpisodeState
from lightrft.application.params import AgentParams
from lightrft.domain.agent import AgentTimeoutError, EnvironmentFactory, StepOutcome, TurnRenderer
from lightrft.domain.ports import RolloutEngine
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

    # --- episodes ----------------------------------------------------------------------
    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` episodes per prompt, grouped: prompt i owns [i*n, (i+1)*n)."""
        if not prompts:
            return []
        start = time.monotonic()
        limits = EpisodeLimits(
            self.params.max_turns,
            self.params.max_response_tokens,
            start + self.params.episode_timeout_s,
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
        log.debug(
            "agent.rollout.done",
            episodes=len(episodes),
            batches=self.generate_calls,
            seconds=round(time.monotonic() - start, 3),
        )
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
            completions = self.engine.generate(inputs, replace(sampling, max_new_tokens=budget))
            for e, completion in zip(group, completions, strict=True):
                e.add_turn(completion)
                if e.end_reason is not None:  # its environment failed to reset: one turn
                    continue
                if completion.finish_reason == "length":
                    capped = budget < sampling.max_new_tokens
                    e.end("token_budget" if capped else "length")
                else:
                    self._start(calls, e, "step")

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
                log.warning("agent.env_error", episode=index, call=kind, error=repr(result.error))
                e.count("env_errors")
                self._after_failure(e, kind, ready)
            elif kind == "reset":
                e.first_input = _checked_first_input(result.value, e)
                ready.append(e)
            else:
                self._after_step(e, _checked_outcome(result.value), ready)
        return ready

    def _after_failure(self, e: EpisodeState, kind: CallKind, ready: list[EpisodeState]) -> None:
        """A failed reset still gets one turn (every episode has a response); a failed step
        ends the episode."""
        if kind == "reset" and e.turns == 0:
            e.end("env_error")
            ready.append(e)
        else:
            e.end("env_error")

    def _after_step(self, e: EpisodeState, outcome: StepOutcome, ready: list[EpisodeState]) -> None:
        e.add_outcome(outcome)
        if outcome.done:
            e.end("done")
        elif e.turns >= e.limits.max_turns:
            e.end("max_turns")
        elif time.monotonic() >= e.limits.deadline:
            e.end("deadline")
        else:
            ids = self.renderer.observation_ids(outcome.observation, e.segments[-1].token_ids)
            budget = e.limits.max_response_tokens
            if budget is not None and e.response_tokens + len(ids) >= budget:
                e.end("token_budget")
                return
            e.add_observation(ids, self.renderer.decode(ids))
            ready.append(e)

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


def _checked_first_input(value: object, e: EpisodeState) -> PromptRecord:
    if not isinstance(value, PromptRecord):
        raise TypeError(
            f"Environment.reset must return a PromptRecord (the first model input), got "
            f"{type(value).__name__} for prompt {e.prompt.uid!r}"
        )
    return value


def _checked_outcome(value: object) -> StepOutcome:
    if not isinstance(value, StepOutcome):
        raise TypeError(f"Environment.step must return a StepOutcome, got {type(value).__name__}")
    return value
