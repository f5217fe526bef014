"""scripts/prm_probe.py prints the step scores the RL source would give the same response."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from lightrft.adapters.datasets.synthetic_steps import CHAIN_INSTRUCTION
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from scripts import prm_probe


def test_the_probe_scores_each_step_as_the_reward_source_does(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Start with 9. Add 2. What is the result?"
    # a plain causal LM gets the default card, whose separator is a blank line
    responses = ["9 + 2 = 11\\n\\n#### 11", "The result is 11."]
    monkeypatch.setattr(sys, "argv", ["prm_probe", str(tiny_dir), question, *responses])
    prm_probe.main()
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["steps"] for row in printed] == [
        ["9 + 2 = 11\n\n", "#### 11"],
        ["The result is 11."],
    ]

    source = HfProcessRewardModel.from_pretrained(tiny_dir, torch.device("cpu"))
    messages = [{"role": "user", "content": f"{question}\n{CHAIN_INSTRUCTION}"}]
    prompt = source.tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    record = PromptRecord("p", prompt, (1,))
    samples = [
        RewardSample(record, Completion(0, (1,), text.replace("\\n", "\n"), "stop"))
        for text in responses
    ]
    expected = [[round(float(x), 2) for x in s] for s in source.step_scores(samples)]
    assert [row["p_plus"] for row in printed] == expected
    assert all(0.0 <= p <= 1.0 for row in printed for p in row["p_plus"])


SENTENCES = {  # the sentence phrasing, written out by hand
    "+": "The result of adding {b} to {a} is {c}.",
    "-": "The result of subtracting {b} from {a} is {c}.",
    "*": "The result of multiplying {a} by {b} is {c}.",
}


@pytest.mark.parametrize("phrasing", ["symbol", "sentence"])
def test_right_vs_wrong_compares_each_held_out_chain_worked_both_ways(
    tiny_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    phrasing: str,
) -> None:
    from lightrft.adapters.datasets.synthetic_steps import chain_problems

    argv = ["prm_probe", str(tiny_dir), "--right-vs-wrong", "3", "--phrasing", phrasing]
    monkeypatch.setattr(sys, "argv", argv)
    prm_probe.main()
    result = json.loads(capsys.readouterr().out)
    assert result["chains"] == 3 and result["right_higher"] in (0, 1 / 3, 2 / 3, 1)
    # the right responses' mean first-step score, through the reward source's own path
    source = HfProcessRewardModel.from_pretrained(tiny_dir, torch.device("cpu"))
    separator = source.card.separator
    samples = []
    for row in chain_problems(3, 10_000, length=1):
        messages = [{"role": "user", "content": row["prompt"]}]
        prompt = source.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        (symbol, operand), answer = row["chain"]["ops"][0], row["reference"]
        start = row["chain"]["start"]
        step = (
            f"{start} {symbol} {operand} = {answer}"
            if phrasing == "symbol"
            else SENTENCES[symbol].format(a=start, b=operand, c=answer)
        )
        text = f"{step}{separator}#### {answer}"
        samples.append(
            RewardSample(PromptRecord("p", prompt, (1,)), Completion(0, (1,), text, "stop"))
        )
    firsts = [float(scores[0]) for scores in source.step_scores(samples)]
    assert result["p_right"] == pytest.approx(sum(firsts) / 3, abs=1e-6)
    assert 0.0 <= result["p_wrong"] <= 1.0
