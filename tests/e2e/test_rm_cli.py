"""`lightrft rm train` / `rm eval` in-process on the tiny model: training, resume, export,
evaluation of the export, preference files (text and chat), row errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.entrypoints.cli import main

TRAIN = ["--lr", "3e-3", "--micro-batch-size", "16", "--synthetic-kinds", "bare,refuse"]


def test_train_resume_export_and_eval(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rm"
    args = ["rm", "train", "--output", str(out), "--model", str(tiny_dir), "--num-synthetic", "80"]
    assert main([*args, *TRAIN, "--total-steps", "2", "--checkpoint-every", "1"]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 2
    assert main([*args, *TRAIN, "--total-steps", "4", "--checkpoint-every", "2", "--resume"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from"] == 2 and summary["steps"] == 4
    capsys.readouterr()
    report = tmp_path / "eval.json"
    code = main(
        [
            "rm",
            "eval",
            "--model",
            str(out / "model"),
            "--num-synthetic",
            "20",
            "--synthetic-kinds",
            "bare,refuse",
            "--output",
            str(report),
        ]
    )
    assert code == 0
    evaluated = json.loads(report.read_text())
    assert evaluated["pairs"] == 20
    assert 0.0 <= evaluated["eval/accuracy"] <= 1.0
    assert (
        evaluated["eval/margin_p25"] <= evaluated["eval/margin_p50"] <= evaluated["eval/margin_p75"]
    )


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_eval_on_chat_file_and_bad_row(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rm"
    assert (
        main(
            [
                "rm",
                "train",
                "--output",
                str(out),
                "--model",
                str(tiny_dir),
                "--num-synthetic",
                "40",
                "--total-steps",
                "1",
                *TRAIN,
            ]
        )
        == 0
    )
    chat = [{"role": "user", "content": "2+2?"}]
    chats = [  # one row shape per file: Arrow needs one type per column
        {
            "chosen": [*chat, {"role": "assistant", "content": "The answer is 4."}],
            "rejected": [*chat, {"role": "assistant", "content": "No idea."}],
        }
    ] * 2
    rows = [{"prompt": "3+3?", "chosen": "The answer is 6.", "rejected": "6"}] * 3
    for name, file_rows in (("chats.jsonl", chats), ("prefs.jsonl", rows)):
        data = _write_jsonl(tmp_path / name, file_rows)
        capsys.readouterr()
        assert main(["rm", "eval", "--model", str(out / "model"), "--data", str(data)]) == 0
        assert json.loads(capsys.readouterr().out)["pairs"] == len(file_rows)
    bad = _write_jsonl(
        tmp_path / "bad.jsonl", [*rows, {"prompt": "x", "chosen": "", "rejected": "y"}]
    )
    assert main(["rm", "eval", "--model", str(out / "model"), "--data", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl row 3" in err and "'chosen'" in err


def test_train_names_every_bad_row_before_any_progress_bar(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = [
        {"prompt": f"{a}+1?", "chosen": f"The answer is {a + 1}.", "rejected": "?"}
        for a in range(6)
    ]
    same = {"prompt": "1+1?", "chosen": "The answer is 2.", "rejected": "The answer is 2."}
    empty = {"prompt": "x", "chosen": "", "rejected": "y"}
    rows = [*good, same, empty]
    data = _write_jsonl(tmp_path / "prefs.jsonl", rows)
    args = ["rm", "train", "--model", str(tiny_dir), "--data", str(data), "--total-steps", "1"]
    capsys.readouterr()
    assert main([*args, "--output", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    before, _, message = err.partition("lightrft: error: ")
    assert "it/s" not in before and "examples/s" not in before  # no bar drawn first
    assert message.splitlines()[:3] == [
        "2 bad rows:",
        "  prefs.jsonl row 6: the same answer as the chosen one (no preference to learn) in "
        "'rejected'",
        "  prefs.jsonl row 7: empty response in 'chosen'",
    ]
    out = tmp_path / "skipped"
    small = ["--batch-size", "4", "--micro-batch-size", "4"]
    assert main([*args, *TRAIN, *small, "--output", str(out), "--skip-bad-rows"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped_rows"] == 2 and summary["train_pairs"] + summary["eval_pairs"] == 6


@pytest.mark.parametrize(
    "argv",
    [
        ["rm", "--help"],
        ["rm", "train", "--help"],
        ["rm", "eval", "--help"],
        ["serve-reward", "--help"],
    ],
)
def test_new_subcommands_have_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    assert "usage: lightrft" in capsys.readouterr().out
