"""`lightrft eval --data`: GSM8K test file on a tiny model equals a direct loop; several
files (GSM8K + MATH-style) in one run with a table and a JSON report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lightrft.adapters.datasets import gsm8k_prompts
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.rewards.answer_check import check_response
from lightrft.entrypoints.cli import main
from tests.unit.adapters.hf.hf_tiny import EOS, tiny_model, tiny_tokenizer

GSM8K_TEST = Path("/work/shared/data/gsm8k/test.jsonl")
PROMPTS = 6
NEW_TOKENS = 8


@pytest.mark.skipif(not GSM8K_TEST.is_file(), reason="GSM8K test file not available")
def test_gsm8k_greedy_accuracy_equals_a_direct_loop(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", str(tiny_dir), "--data", str(GSM8K_TEST), "--output", str(out)]
    argv += [f"--max-prompts={PROMPTS}", f"--max-new-tokens={NEW_TOKENS}", "--no-progress"]
    assert main(argv) == 0
    entry = json.loads(out.read_text())["files"][str(GSM8K_TEST)]
    # the direct loop: same rendering, HF generate (greedy), decode, check each answer
    tok = tiny_tokenizer()
    fmt = PromptFormat(max_prompt_tokens=512)  # data.eval's defaults
    ds = gsm8k_prompts(GSM8K_TEST, tok, prompt_format=fmt, name=GSM8K_TEST.stem)
    model = tiny_model()
    texts, correct = [], []
    for i in range(PROMPTS):
        record = ds[i]
        ids = torch.tensor([record.prompt_token_ids])
        with torch.no_grad():
            gen = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=NEW_TOKENS,
                do_sample=False,
                eos_token_id=EOS,
                pad_token_id=0,
            )
        text = tok.decode(gen[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
        texts.append(text)
        correct.append(check_response(text, record.reference or "")[0] == "correct")
    records = entry["records"]
    assert [r["uid"] for r in records] == [ds[i].uid for i in range(PROMPTS)]
    assert [r["greedy_response"] for r in records] == texts
    assert [r["greedy_correct"] for r in records] == correct
    assert entry["metrics"]["greedy_accuracy"] == sum(correct) / PROMPTS
    assert entry["metrics"]["prompts"] == PROMPTS
    assert all(r["greedy_tokens"] <= NEW_TOKENS for r in records)


def test_several_files_one_report(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text(
        "".join(
            json.dumps({"question": f"What is {a}+1?", "answer": f"so #### {a + 1}"}) + "\n"
            for a in range(3)
        )
    )
    boxed = tmp_path / "math.jsonl"
    boxed.write_text(
        json.dumps({"problem": "1/2+1/2?", "solution": "It is $\\boxed{1}$."})
        + "\n"
        + json.dumps({"problem": "x?", "answer": "\\frac{1}{2}"})
        + "\n"
    )
    out = tmp_path / "report.json"
    argv = ["eval", "--model", str(tiny_dir), "--data", str(gsm), str(boxed), "--output", str(out)]
    argv += ["--n-samples=4", "--k", "1", "4", "--max-new-tokens=4", "--no-progress"]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert list(report["files"]) == [str(gsm), str(boxed)]
    assert report["params"]["ks"] == [1, 4]
    math_entry = report["files"][str(boxed)]
    assert [r["reference"] for r in math_entry["records"]] == ["1", "\\frac{1}{2}"]
    for entry in report["files"].values():
        m = entry["metrics"]
        assert {"greedy_accuracy", "pass@1", "pass@4", "maj@1", "maj@4"} <= set(m)
        assert m["pass@1"] <= m["pass@4"]
        assert all(len(r["sample_answers"]) == 4 for r in entry["records"])
    table = capsys.readouterr().out
    assert "gsm.jsonl" in table and "math.jsonl" in table and "maj@4" in table


def test_unknown_file_shape_is_a_clear_error(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "hello"}) + "\n")
    assert main(["eval", "--model", str(tiny_dir), "--data", str(bad), "--no-progress"]) == 2
    assert "cannot tell the format from keys ['text']" in capsys.readouterr().err


def test_builtin_evaluates_the_config_eval_set(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", str(tiny_dir), "--data", "builtin", "--output", str(out)]
    argv += ["--max-new-tokens=4", "--no-progress", "data.eval.num_builtin=5", "data.eval.seed=7"]
    assert main(argv) == 0
    entry = json.loads(out.read_text())["files"]["builtin"]
    assert entry["metrics"]["prompts"] == 5
    assert [r["uid"] for r in entry["records"]][0] == "arithmetic-7-1:0"
