"""Rule-based reward sources (``RewardSource`` port): math answers, short answers, format, length,
the original LightRFT's think-and-box and answer-tag rules, and user functions run in a killable worker process.

The classes load on first access (PEP 562), so the worker process that imports
:mod:`~lightrft.adapters.rewards.answer_check` does not pay for torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lightrft.adapters.rewards.answer_grader import MathAnswerGrader
    from lightrft.adapters.rewards.answer_tag_rule import AnswerTagRule
    from lightrft.adapters.rewards.choice_answer import ChoiceAnswerReward
    from lightrft.adapters.rewards.environment_reward import EnvironmentReward
    from lightrft.adapters.rewards.format_reward import FormatReward
    from lightrft.adapters.rewards.length_reward import LengthReward
    from lightrft.adapters.rewards.majority_vote import MajorityVoteReward
    from lightrft.adapters.rewards.math_answer import MathAnswerReward
    from lightrft.adapters.rewards.python_function import PythonFunctionReward
    from lightrft.adapters.rewards.think_boxed_rule import ThinkBoxedRule

_EXPORTS = {
    "AnswerTagRule": "answer_tag_rule",
    "MathAnswerGrader": "answer_grader",
    "ChoiceAnswerReward": "choice_answer",
    "EnvironmentReward": "environment_reward",
    "FormatReward": "format_reward",
    "LengthReward": "length_reward",
    "MajorityVoteReward": "majority_vote",
    "MathAnswerReward": "math_answer",
    "PythonFunctionReward": "python_function",
    "ThinkBoxedRule": "think_boxed_rule",
}

__all__ = [
    "AnswerTagRule",
    "ChoiceAnswerReward",
    "EnvironmentReward",
    "FormatReward",
    "LengthReward",
    "MajorityVoteReward",
    "MathAnswerGrader",
    "MathAnswerReward",
    "PythonFunctionReward",
    "ThinkBoxedRule",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
