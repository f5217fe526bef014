"""A test-only plugin engine that plays a tool-using agent honestly (for wiring tests).

``tool_script``: on the first turn it calls the calculator on the sum of the numbers in the
prompt (right for the built-in arithmetic task's additions); once an observation holds a
tool result, it answers ``#### <result>`` and ends its turn with EOS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from lightrft.adapters.engine_parts.rollout_engine_base import RolloutEngineBase
from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from lightrft.entrypoints.config.components import ComponentSection
from lightrft.entrypoints.wiring.registries import BuildContext, register_component


class ToolScriptEngine(RolloutEngineBase):
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.generate_calls = 0
        self._awake = True

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        self.generate_calls += 1
        out = []
        for i, prompt in enumerate(prompts):
            seen = self.tokenizer.decode(list(prompt.prompt_token_ids))
            results = re.findall(r"tool: (-?\d+)", seen)
            if results:
                text = f"#### {results[-1]}"
                ids = [*self.tokenizer.encode(text, add_special_tokens=False)]
                ids.append(self.tokenizer.eos_token_id)
            else:
                numbers = re.findall(r"\d+", prompt.prompt_text)[:2]
                payload = {"name": "calculator", "arguments": {"expression": " + ".join(numbers)}}
                text = f"<tool_call>{json.dumps(payload)}</tool_call>"
                ids = self.tokenizer.encode(text, add_special_tokens=False)
            for _ in range(sampling.n):
                out.append(Completion(i, tuple(ids), text, "stop", (-0.5,) * len(ids)))
        return out

    def load_weights(self, weights: NamedTensors) -> None:
        for _ in weights:
            pass

    def sleep(self) -> None:
        self._awake = False

    def wake_up(self) -> None:
        self._awake = True


class ToolScriptConfig(ComponentSection):
    type: Literal["tool_script"] = "tool_script"


def build_tool_script(section: ToolScriptConfig, context: BuildContext) -> ToolScriptEngine:
    return ToolScriptEngine(context.tokenizer)


register_component("engine", "tool_script", ToolScriptConfig, build_tool_script)
