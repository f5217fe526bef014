"""Reward functions written for verl, TRL and OpenRLHF score unchanged (``reward.sources``
type ``python`` with ``convention``), reading what their framework passes them from prompts
loaded from data files in that framework's layout.

The function files are written here in each framework's published form (verl: "Implement
Reward Function for Dataset", ``compute_score(data_source, solution_str, ground_truth,
extra_info=None)``; TRL: GRPO Trainer "Using a custom reward function", ``(prompts,
completions, **kwargs) -> list[float]``; OpenRLHF: ``examples/python/reward_func.py``'s
``reward_func(queries, prompts, labels)``), and every expected value is worked out by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
import torch

from lightrft.adapters.rewards import PythonFunctionReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config.reward_configs import PythonRewardConfig
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import build_prompts
from tests.helpers.original_layout import verl_row, write_rows
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer

VERL_FILE = '''
import re


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """1 when the last number of the solution is the ground truth, plus 0.1 per index of a
    train row; a dict with the score and the accuracy when right (verl logs the extras)."""
    if data_source != "openai/gsm8k":
        raise ValueError(f"unexpected data source {data_source}")
    numbers = re.findall(r"-?[0-9]+", solution_str)
    correct = bool(numbers) and numbers[-1] == ground_truth
    score = 1.0 if correct else 0.0
    if extra_info and extra_info.get("split") == "train":
        score += 0.1 * extra_info["index"]
    return {"score": score, "acc": correct} if correct else score
'''

TRL_FILE = '''
import re


def boxed_accuracy(completions, ground_truth, **kwargs):
    """TRL's standard format: completions are strings."""
    found = [re.search(r"\\\\boxed\\{(.*?)\\}", completion) for completion in completions]
    answers = [match.group(1) if match else "" for match in found]
    return [1.0 if a == gt else 0.0 for a, gt in zip(answers, ground_truth)]


def prompt_length(prompts, completions, **kwargs):
    """len(prompt) of a string prompt, or the number of messages of a chat."""
    return [float(len(prompt)) for prompt in prompts]


def think_format(completions, **kwargs):
    """TRL's conversational format: each completion is [{"role": "assistant", "content"}];
    None (does not apply) for a completion that says nothing."""
    contents = [completion[0]["content"] for completion in completions]
    return [
        None if not c else (1.0 if re.match(r"^<think>.*?</think>.+$", c, re.S) else 0.0)
        for c in contents
    ]
'''

OPENRLHF_FILE = '''
import torch


def reward_func(queries, prompts, labels, **kwargs):
    """+1 when the response (the query after its prompt) ends with the label, else -1."""
    rewards = []
    for query, prompt, label in zip(queries, prompts, labels):
        response = query[len(prompt):] if query.startswith(prompt) else query
        rewards.append(1.0 if response.strip().endswith(label) else -1.0)
    reward = torch.tensor(rewards)
    return {
        "rewards": reward,
        "scores": (reward + 1) / 2,
        "extra_logs": {"accuracy": (reward > 0).float()},
    }
'''


@pytest.fixture
def sources() -> Iterator[list[PythonFunctionReward]]:
    made: list[PythonFunctionReward] = []
    yield made
    for source in made:
        source.close()


def source(
    made: list[PythonFunctionReward], path: Path, text: str, **kw: Any
) -> PythonFunctionReward:
    path.write_text(dedent(text))
    function = kw.pop("function", str(path))
    reward = PythonFunctionReward(function, **kw)
    made.append(reward)
    return reward


def loaded(path: Path, **fields: Any) -> list[PromptRecord]:
    prompts = build_prompts(DatasetConfig(path=str(path), **fields), byte_tokenizer(), None)
    assert prompts is not None
    return [prompts[i] for i in range(len(prompts))]


def scored(records: list[PromptRecord], responses: list[str]) -> list[RewardSample]:
    return [
        RewardSample(record, Completion(i, (5, 6), text, "stop"))
        for i, (record, text) in enumerate(zip(records, responses, strict=True))
    ]


def test_a_verl_compute_score_file_scores_verl_rows(tmp_path: Path, sources: list[Any]) -> None:
    rows = [verl_row("What is 2 + 5?", "7", "train", 0), verl_row("3 * 3?", "9", "train", 1)]
    rows.append({**verl_row("1 + 1?", "2", "test", 4)})
    write_rows(tmp_path / "verl" / "train.parquet", rows)
    records = loaded(tmp_path / "verl")
    assert records[1].metadata["columns"]["data_source"] == "openai/gsm8k"
    reward = source(sources, tmp_path / "my_reward.py", VERL_FILE, convention="verl")
    assert reward.name == "compute_score"  # a bare file: verl's default name
    result = reward.score(scored(records, ["so it is 7", "I get 8", "2"]))
    # row 0: 7 right -> {"score": 1.0 + 0.1 * 0}; row 1: 8 wrong, train index 1 -> 0.1;
    # row 2: 2 right, a test row (no bonus) -> 1.0
    torch.testing.assert_close(result.scores, torch.tensor([1.0, 0.1, 1.0]))
    assert float(result.metrics["failures"]) == 0.0


def test_verl_without_row_columns_uses_the_reference(tmp_path: Path, sources: list[Any]) -> None:
    record = PromptRecord("u", "Q", (1,), reference="3", metadata={"dataset": "openai/gsm8k"})
    reward = source(sources, tmp_path / "r.py", VERL_FILE, convention="verl")
    result = reward.score(scored([record, record], ["3", "4"]))
    torch.testing.assert_close(result.scores, torch.tensor([1.0, 0.0]))  # no extra_info: no bonus


def test_trl_reward_functions_get_completions_and_the_dataset_columns(
    tmp_path: Path, sources: list[Any]
) -> None:
    data = tmp_path / "trl.jsonl"
    lines = [
        {"prompt": "Add 2 and 3.", "ground_truth": "5"},
        {"prompt": "Add 1 and 1.", "ground_truth": "2"},
    ]
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    records = loaded(data, reference_key="ground_truth")
    samples = scored(records, ["It is \\boxed{5}.", "\\boxed{3}"])
    file = tmp_path / "trl_rewards.py"
    accuracy = source(sources, file, TRL_FILE, function=f"{file}:boxed_accuracy", convention="trl")
    torch.testing.assert_close(accuracy.score(samples).scores, torch.tensor([1.0, 0.0]))
    lengths = source(sources, file, TRL_FILE, function=f"{file}:prompt_length", convention="trl")
    # standard format: the prompt as written, not the rendered chat: len("Add 2 and 3.") = 12
    torch.testing.assert_close(lengths.score(samples).scores, torch.tensor([12.0, 12.0]))


def test_trl_conversational_rows_get_message_lists(tmp_path: Path, sources: list[Any]) -> None:
    data = tmp_path / "chat.jsonl"
    chat = [{"role": "system", "content": "Think first."}, {"role": "user", "content": "2+2?"}]
    data.write_text(json.dumps({"prompt": chat}) + "\n")
    (record,) = loaded(data, reference_key=None)
    file = tmp_path / "trl_rewards.py"
    lengths = source(sources, file, TRL_FILE, function=f"{file}:prompt_length", convention="trl")
    form = source(
        sources, file, TRL_FILE, function=f"{file}:think_format", convention="trl",
        failure_score=-5.0,
    )  # fmt: skip
    samples = scored([record] * 3, ["<think>2 and 2</think>4", "4", ""])
    torch.testing.assert_close(lengths.score(samples).scores, torch.tensor([2.0, 2.0, 2.0]))
    result = form.score(samples)
    # formatted -> 1; unformatted -> 0; empty -> None, "does not apply": the failure score
    torch.testing.assert_close(result.scores, torch.tensor([1.0, 0.0, -5.0]))
    assert float(result.metrics["failures"]) == 1.0


def test_a_trl_file_needs_the_function_named(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text(TRL_FILE)
    with pytest.raises(ValueError, match=r"f\.py.*name the function.*trl convention"):
        PythonFunctionReward(str(tmp_path / "f.py"), convention="trl")


def test_an_openrlhf_reward_func_file_scores_the_batch(tmp_path: Path, sources: list[Any]) -> None:
    records = [
        PromptRecord("a", "<user>2+2?</user>", (1,), reference="4"),
        PromptRecord("b", "<user>3+4?</user>", (1,), reference="7"),
    ]
    reward = source(sources, tmp_path / "reward_func.py", OPENRLHF_FILE, convention="openrlhf")
    assert reward.name == "reward_func"
    result = reward.score(scored([records[0], records[1], records[1]], ["so 4", "8", "7"]))
    torch.testing.assert_close(result.scores, torch.tensor([1.0, -1.0, 1.0]))
    assert float(result.metrics["extra_accuracy"]) == pytest.approx(2 / 3)


def test_a_batched_function_of_the_wrong_length_fails_its_batch(
    tmp_path: Path, sources: list[Any]
) -> None:
    text = "def reward_func(queries, prompts, labels):\n    return [1.0]\n"
    reward = source(sources, tmp_path / "short.py", text, convention="openrlhf", failure_score=-1)
    record = PromptRecord("a", "Q", (1,), reference="x")
    result = reward.score(scored([record, record], ["x", "y"]))
    assert result.scores.tolist() == [-1.0, -1.0]
    assert float(result.metrics["failures"]) == 2.0


def test_the_python_section_takes_a_convention() -> None:
    section = PythonRewardConfig(type="python", function="r.py", convention="verl")
    assert section.convention == "verl"
    with pytest.raises(ValueError, match="convention"):
        PythonRewardConfig(type="python", function="r.py", convention="rllib")  # type: ignore[arg-type]


def test_the_builder_passes_the_convention(tmp_path: Path) -> None:
    from lightrft.entrypoints.wiring.registries import REWARD_SOURCES

    (tmp_path / "rf.py").write_text(OPENRLHF_FILE)
    section = PythonRewardConfig(
        type="python", function=str(tmp_path / "rf.py"), convention="openrlhf"
    )
    built = REWARD_SOURCES.get("python")(section, None)  # the context is unused
    try:
        record = PromptRecord("a", "Q: ", (1,), reference="ok")
        assert built.score(scored([record], ["it is ok"])).scores.tolist() == [1.0]
    finally:
        built.close()
