"""A scripted judge for judge-RL runs, registered as a plugin rollout engine
(``rollout.engine=preferring_judge``): it prefers the response that starts with ``Good``,
so its verdicts, and the agreement they earn, are known by hand.

Sample 0 of each prompt's group reasons first (``<think>...</think> [[X]]``), the others
give the bare verdict (``[[X]]``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from lightrft.entrypoints.config.components import ComponentSection
from lightrft.entrypoints.wiring.registries import BuildContext, register_component
from tests.helpers.plugin_components import ScriptedEngine


def write_judge_pairs(path: Path) -> Path:
    """Four preference rows: pairs 0-2 prefer ``Good answer i.``, as the scripted judge does;
    pair 3's label prefers ``Bad answer 3.``, so the judge disagrees with it."""
    rows = [
        {
            "prompt": f"Say something about {i}.",
            "chosen": f"Good answer {i}.",
            "rejected": f"Bad answer {i}.",
        }
        for i in range(3)
    ]
    rows.append(
        {
            "prompt": "Say something about 3.",
            "chosen": "Bad answer 3.",
            "rejected": "Good answer 3.",
        }
    )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def preferred_verdict(prompt_text: str) -> str:
    """``[[A]]`` when response 1 starts with ``Good``, else ``[[B]]``."""
    return "[[A]]" if "Response 1: Good" in prompt_text else "[[B]]"


class PreferringJudge(ScriptedEngine):
    """The scripted judge of the module docstring."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__((), "")
        self.tokenizer = tokenizer

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        if not self.is_awake:
            raise RuntimeError("generate while asleep")
        self.generate_calls += 1
        out = []
        for i, prompt in enumerate(prompts):
            verdict = preferred_verdict(prompt.prompt_text)
            for j in range(sampling.n):
                text = f"<think>the good one</think> {verdict}" if j == 0 else verdict
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                out.append(Completion(i, tuple(ids[: sampling.max_new_tokens]), text, "stop"))
        return out


class PreferringJudgeConfig(ComponentSection):
    type: Literal["preferring_judge"] = "preferring_judge"


def build_preferring_judge(
    section: PreferringJudgeConfig, context: BuildContext
) -> PreferringJudge:
    return PreferringJudge(context.tokenizer)


register_component("engine", "preferring_judge", PreferringJudgeConfig, build_preferring_judge)
