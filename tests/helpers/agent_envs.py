"""Test environments for the multi-turn rollout: slow, hanging, failing, counting ones."""

from __future__ import annotations

import threading
import time

from lightrft.adapters.fakes import FakeRetryEnvironment
from lightrft.domain.agent import Action, ChatMessage, StepOutcome
from lightrft.domain.types import PromptRecord


class NeverDoneEnvironment:
    """Answers every turn with the observation ``"1"`` and never ends the episode."""

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        return prompt

    def step(self, action: Action) -> StepOutcome:
        return StepOutcome((ChatMessage("tool", "1"),), reward=0.25, counters={"tool_calls": 1})

    def close(self) -> None:
        pass


class SlowEnvironment(NeverDoneEnvironment):
    """Sleeps ``seconds`` in every step."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def step(self, action: Action) -> StepOutcome:
        time.sleep(self.seconds)
        return super().step(action)


class HangingEnvironment(NeverDoneEnvironment):
    """``step`` (or ``reset``) blocks until ``release`` is set (a test sets it at the end)."""

    def __init__(self, release: threading.Event, in_reset: bool = False) -> None:
        self.release, self.in_reset = release, in_reset

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        if self.in_reset:
            self.release.wait()
        return prompt

    def step(self, action: Action) -> StepOutcome:
        self.release.wait()
        return super().step(action)


class FailingEnvironment(FakeRetryEnvironment):
    """Raises in ``step`` (and in ``close`` when asked)."""

    def __init__(self, fail_close: bool = False) -> None:
        super().__init__()
        self.fail_close = fail_close

    def step(self, action: Action) -> StepOutcome:
        raise ValueError("environment broke")

    def close(self) -> None:
        if self.fail_close:
            raise OSError("cannot close")
