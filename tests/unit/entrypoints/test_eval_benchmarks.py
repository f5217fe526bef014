"""`lightrft eval` with the original's math_benchmarks flags: benchmarks by name in the
original's ``eval_data`` layout, GPQA graded by the chosen letter (hand-checked), the
original's run_eval.sh command line accepted, every problem of a command line reported
together."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from lightrft.adapters.datasets.benchmark_rows import benchmark_prompts, choice_letters
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.rewards.multiple_choice import MultipleChoiceGrader
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.wiring.eval_files import benchmark_files, detect_format
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer

GPQA = [  # the original's gpqa_diamond.json rows: ShareGPT prompt, letter, choices
    ("Which planet is densest?\n\nA. d\nB. a\nC. b\nD. c", "C"),
    ("Which medium absorbs?\n\nA. warm\nB. cold\nC. hot\nD. none", "A"),
    ("Pick the oxide.\n\nA. x\nB. y\nC. z\nD. w", "C"),
    ("Which spin?\n\nA. 1/2\nB. 1\nC. 3/2\nD. 2", "D"),
]
AIME = [("Find the number of residents.", "73"), ("Find the sum of squares.", "236")]

# run_eval.sh's python line, its variables filled in (paths replaced), USE_VLLM=0 and =1
RUN_EVAL = (
    "--model_path {MODEL} --benchmarks math500 aime2024 gpqa_diamond --data_root {ROOT} "
    "--max_tokens 8192 --temperature 0.0 --top_p 0.95 --batch_size 1 --output_dir {OUT}"
)
RUN_EVAL_VLLM = RUN_EVAL + " --use_vllm --vllm_tensor_parallel_size 2"


def write_eval_data(root: Path) -> Path:
    """The original's layout: ROOT/eval_data/{gpqa_diamond,aime2024,math500}.json."""
    data = root / "eval_data"
    data.mkdir(parents=True)
    gpqa = [
        {
            "prompt": [{"from": "user", "value": question}],
            "final_answer": letter,
            "choices": {k: question.split(f"{k}. ")[1].split("\n")[0] for k in "ABCD"},
        }
        for question, letter in GPQA
    ]
    (data / "gpqa_diamond.json").write_text(json.dumps(gpqa, indent=2))
    aime = [{"prompt": [{"from": "user", "value": q}], "final_answer": a} for q, a in AIME]
    (data / "aime2024.json").write_text(json.dumps(aime, indent=2))
    (data / "math500.json").write_text(json.dumps(aime[:1], indent=2))
    return root


@pytest.mark.parametrize(
    ("response", "chosen"),
    [
        ("The answer is (C).", "C"),
        ("Answer: **B**", "B"),
        ("so the density is highest: \\boxed{D}", "D"),
        ("\\boxed{\\text{A}}", "A"),
        ("C", "C"),
        ("(b)", "B"),
        ("I first thought A, but the answer is D", "D"),
        ("The answer is a subtle one", None),  # the article, not a choice
        ("answer is E", None),  # not one of the question's letters
        ("no idea", None),
    ],
)
def test_the_chosen_letter(response: str, chosen: str | None) -> None:
    grader = MultipleChoiceGrader("ABCD")
    assert grader.choice(response) == chosen
    graded = grader.grade(response, "c")
    assert graded.key == chosen and graded.correct is (chosen == "C")


def test_benchmark_rows_are_the_messages_and_the_final_answer(tmp_path: Path) -> None:
    root = write_eval_data(tmp_path)
    path = root / "eval_data" / "gpqa_diamond.json"
    assert detect_format(path) == "benchmark"
    assert choice_letters(path) == ["A", "B", "C", "D"]
    assert choice_letters(root / "eval_data" / "aime2024.json") == []
    prompts = benchmark_prompts(path, tiny_tokenizer(), prompt_format=PromptFormat())
    assert len(prompts) == 4
    record = prompts[1]
    assert record.reference == "A"
    assert "Which medium absorbs?" in record.prompt_text
    assert record.prompt_text.startswith("user: ")  # the chat template's user turn


def test_benchmarks_are_found_by_name_and_every_missing_one_named(tmp_path: Path) -> None:
    root = write_eval_data(tmp_path)
    found = benchmark_files(["gpqa_diamond", "aime2024"], root)
    assert found == [root / "eval_data" / "gpqa_diamond.json", root / "eval_data" / "aime2024.json"]
    assert benchmark_files(["math500"], root / "eval_data") == [root / "eval_data" / "math500.json"]
    with pytest.raises(FileNotFoundError) as err:
        benchmark_files(["aime2025", "gpqa_diamond", "olympiad"], root)
    assert "aime2025.json, olympiad.json" in str(err.value)


def scripted(response: str) -> list[str]:
    """Overrides: an engine answering every prompt with ``response`` (a plugin engine)."""
    return [
        "plugins=[tests.helpers.plugin_components]",
        "rollout.engine=scripted",
        f"rollout.engine.response={response}",
    ]


def run_eval(tiny_dir: Path, root: Path, out: Path, response: str, *extra: str) -> Any:
    args = RUN_EVAL.format(MODEL=tiny_dir, ROOT=root, OUT=out).replace("8192", "8")
    argv = ["eval", *shlex.split(args), "--no-progress", *extra, *scripted(response)]
    assert main(argv) == 0
    return json.loads((out / "eval.json").read_text())


def test_the_original_command_grades_gpqa_by_letter(tiny_dir: Path, tmp_path: Path) -> None:
    root = write_eval_data(tmp_path / "data")
    report = run_eval(tiny_dir, root, tmp_path / "out", "The answer is (C). \\boxed{73}")
    files = {Path(k).stem: v for k, v in report["files"].items()}
    assert list(files) == ["math500", "aime2024", "gpqa_diamond"]
    # gpqa: references C, A, C, D; every response chose C -> 2 of 4
    gpqa = files["gpqa_diamond"]
    assert [r["greedy_answer"] for r in gpqa["records"]] == ["C"] * 4
    assert [r["greedy_correct"] for r in gpqa["records"]] == [True, False, True, False]
    assert gpqa["metrics"]["greedy_accuracy"] == 0.5
    # aime: \boxed{73} is right for 73, wrong for 236; math500 holds the first row only
    assert files["aime2024"]["metrics"]["greedy_accuracy"] == 0.5
    assert files["math500"]["metrics"]["greedy_accuracy"] == 1.0
    assert report["params"]["max_new_tokens"] == 8 and report["params"]["n_samples"] == 0


def test_a_temperature_without_n_samples_samples_once(tiny_dir: Path, tmp_path: Path) -> None:
    root = write_eval_data(tmp_path / "data")
    out = tmp_path / "out"
    report = run_eval(tiny_dir, root, out, "The answer is A", "--temperature", "0.7")
    gpqa = next(v for k, v in report["files"].items() if "gpqa" in k)
    assert report["params"]["n_samples"] == 1 and report["params"]["temperature"] == 0.7
    assert gpqa["metrics"]["sample_accuracy"] == 0.25  # only the second question is A


def test_the_vllm_flags_are_engine_settings(tmp_path: Path) -> None:
    import argparse

    from lightrft.entrypoints.commands import eval as eval_command
    from lightrft.entrypoints.config.loading import load_config

    parser = argparse.ArgumentParser()
    eval_command.add_parser(parser)
    args, rest = parser.parse_known_args(
        shlex.split(RUN_EVAL_VLLM.format(MODEL=tmp_path, ROOT=tmp_path, OUT=tmp_path))
    )
    assert rest == []
    assert args.benchmarks == ["math500", "aime2024", "gpqa_diamond"]
    assert (args.max_new_tokens, args.top_p, args.batch_size) == (8192, 0.95, 1)
    config = load_config(None, eval_command.original_overrides(args))
    assert config.rollout.engine.type == "vllm"
    assert config.rollout.engine.tensor_parallel_size == 2  # type: ignore[attr-defined]


def test_every_problem_of_the_command_line_at_once(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_eval_data(tmp_path)
    argv = ["eval", "--model_path", str(tiny_dir), "--benchmarks", "aime2025,gpqa_diamond"]
    argv += ["--data_root", str(root), "--no_such_flag", "1", "--vllm_gpu_util", "0.5"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--no_such_flag, --vllm_gpu_util" in err  # the unknown flags, together
    assert "no aime2025.json" in err  # and the missing benchmark
