"""A multi-turn version of the synthetic task, and a turn renderer for its vocabulary.

``FakeRetryEnvironment``: the model answers the prompt of :mod:`lightrft.adapters.fakes.task`
(the successor of the last digit); a right first token ends the episode with reward 1, a
wrong one gets an observation that repeats the prompt's last digit, so the same rule answers
the next turn. ``FakeTurnRenderer`` renders a message as its digits followed by ``=`` (the
task's "generation prompt"), after an EOS that closes a turn the model did not close.
"""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.adapters.fakes import task
from lightrft.domain.agent import Action, ChatMessage, StepOutcome
from lightrft.domain.types import PromptRecord


class FakeTurnRenderer:
    """``TurnRenderer`` over the synthetic task's vocabulary. Records ``rendered`` calls."""

    def __init__(self) -> None:
        self.rendered = 0

    def observation_ids(
        self, messages: Sequence[ChatMessage], generated: Sequence[int]
    ) -> tuple[int, ...]:
        """EOS if the turn did not end with one, each message's digits, then ``=``."""
        self.rendered += 1
        close = () if generated and generated[-1] == task.EOS_ID else (task.EOS_ID,)
        body = tuple(
            t
            for m in messages
            for t in task.encode_digits("".join(c for c in m.content if c in task.DIGIT_CHARS))
        )
        return (*close, *body, task.EQUALS_ID)

    def decode(self, token_ids: Sequence[int]) -> str:
        """The task's text of ``token_ids`` with specials shown."""
        return task.decode(token_ids, skip_special_tokens=False)


class FakeRetryEnvironment:
    """``Environment``: retry the synthetic task until right (see the module docstring).
    Records ``steps`` and ``closed``."""

    def __init__(self) -> None:
        self.prompt: PromptRecord | None = None
        self.steps = 0
        self.closed = False

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        """Keeps the prompt; the first input is the prompt itself."""
        self.prompt = prompt
        return prompt

    def step(self, action: Action) -> StepOutcome:
        """Reward 1 and done for the right first token; else the last digit again."""
        if self.prompt is None:
            raise RuntimeError("FakeRetryEnvironment.step before reset")
        self.steps += 1
        answer = task.correct_answer(self.prompt.prompt_token_ids)
        if action.token_ids[:1] == (answer,):
            return StepOutcome((), reward=1.0, done=True, counters={"correct_turns": 1.0})
        last = [t for t in self.prompt.prompt_token_ids if task.is_digit(t)][-1]
        return StepOutcome((ChatMessage("user", task.decode([last])),), reward=0.0)

    def close(self) -> None:
        """Marks the environment closed."""
        self.closed = True
