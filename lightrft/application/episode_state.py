"""One episode in progress: its token context, segments, budget and deadline.

The context is the first model input (the prompt ids the environment's ``reset`` returned)
followed by every segment so far; a model turn's ids go in exactly as generated and an
observation's ids exactly as rendered, so the final response is the concatenation of the
segments, token for token (no re-tokenization anywhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lightrft.domain.agent import Action, Environment, StepOutcome
from lightrft.domain.modality import Payload
from lightrft.domain.trajectory import EndReason, Episode, Segment, sum_counters
from lightrft.domain.types import Completion, FinishReason, PromptRecord


@dataclass(frozen=True)
class EpisodeLimits:
    """The limits of one episode (from :class:`~lightrft.application.params.AgentParams`)."""

    max_turns: int
    max_response_tokens: int | None  # generated + observation tokens; None: no budget
    deadline: float  # monotonic seconds
    max_observation_tokens: int = 4096  # one observation, rendered
    max_abs_reward: float = 1e6  # one turn's reward, in size
    max_counter_keys: int = 64  # counter names of the episode
    vocab_size: int | None = None  # token ids an environment may return: [0, vocab_size)


@dataclass
class EpisodeState:
    """Mutable state of one episode, owned by the rollout's scheduler thread."""

    index: int  # row of the episode in the request batch
    prompt_index: int
    sample: int  # which of the prompt's n episodes (names its turns' seeds)
    prompt: PromptRecord
    env: Environment
    limits: EpisodeLimits
    first_input: PromptRecord | None = None  # set by reset
    segments: list[Segment] = field(default_factory=list)
    turn_rewards: list[float] = field(default_factory=list)
    counters: list[dict[str, float]] = field(default_factory=list)
    end_reason: EndReason | None = None
    last_action: Action | None = None  # the last model turn, for the environment
    # (segments up to and including an observation with images, the media payload then)
    media: list[tuple[int, Payload]] = field(default_factory=list)

    @property
    def turns(self) -> int:
        """Model turns generated so far."""
        return sum(1 for s in self.segments if s.trained)

    @property
    def response_tokens(self) -> int:
        """Tokens after the first input so far."""
        return sum(len(s.token_ids) for s in self.segments)

    def counter_keys(self) -> set[str]:
        """The counter names of the episode so far."""
        return {key for part in self.counters for key in part}

    def remaining_tokens(self, per_turn: int) -> int:
        """How many tokens the next model turn may generate (``per_turn`` or less)."""
        budget = self.limits.max_response_tokens
        return per_turn if budget is None else min(per_turn, budget - self.response_tokens)

    def next_input(self) -> PromptRecord:
        """The model input of the next turn: the first input plus every segment."""
        first = self.first_input or self.prompt
        ids = first.prompt_token_ids + tuple(t for s in self.segments for t in s.token_ids)
        return PromptRecord(
            uid=f"{self.prompt.uid}/sample{self.sample}/turn{self.turns}",
            prompt_text=first.prompt_text,
            prompt_token_ids=ids,
            reference=self.prompt.reference,
            multimodal=self.current_media(),
            metadata=first.metadata,
        )

    def current_media(self) -> Payload:
        """The media of the episode's context so far: the first input's, then every image an
        observation brought."""
        return self.media[-1][1] if self.media else (self.first_input or self.prompt).multimodal

    def add_turn(self, completion: Completion) -> Action:
        """Appends a generated turn (ids and log-probs as the engine gave them)."""
        self.segments.append(
            Segment(completion.token_ids, completion.text, True, completion.logprobs)
        )
        self.last_action = Action(completion.token_ids, completion.text, completion.finish_reason)
        return self.last_action

    def add_outcome(self, outcome: StepOutcome) -> None:
        """Records the environment's reward and counters for the last turn."""
        self.turn_rewards.append(float(outcome.reward))
        self.counters.append(dict(outcome.counters))

    def add_observation(
        self, token_ids: tuple[int, ...], text: str, media: Payload | None = None
    ) -> None:
        """Appends an observation's rendered ids (never trained); ``media``: the episode's
        media payload with the observation's images appended."""
        self.segments.append(Segment(token_ids, text, False))
        if media is not None:
            self.media.append((len(self.segments), media))

    def count(self, key: str) -> None:
        """Adds 1 to the rollout's own counter ``key``."""
        self.counters.append({key: 1.0})

    def end(self, reason: EndReason) -> None:
        """Marks the episode finished (the first reason wins)."""
        if self.end_reason is None:
            self.end_reason = reason

    def completion(self) -> Completion:
        """The episode as one :class:`Completion`. Its ``text`` is the last model turn's (the
        final answer, what reward sources and graders read); an observation after the last
        turn (the episode ended before the model saw it) is dropped."""
        while self.segments and not self.segments[-1].trained:
            self.segments.pop()
        reason = self.end_reason or "done"
        episode = Episode(
            tuple(self.segments), tuple(self.turn_rewards), reason, sum_counters(self.counters)
        )
        finish: FinishReason = "stop" if reason == "done" else "length"
        return Completion(
            prompt_index=self.prompt_index,
            token_ids=episode.token_ids,
            text=self.segments[-1].text,
            finish_reason=finish,
            logprobs=episode.logprobs,
            loss_mask=episode.loss_mask,
            episode=episode,
            multimodal=self._row_media(),
        )

    def _row_media(self) -> Payload | None:
        """The payload of the training row when observations brought images that are still
        in the trajectory (``None``: the prompt's payload is the row's)."""
        kept = [payload for end, payload in self.media if end <= len(self.segments)]
        return kept[-1] if kept else None
