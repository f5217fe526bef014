"""SFT data from the config: the built-in arithmetic rows, system prompts and max_samples."""

from __future__ import annotations

import json
from pathlib import Path

from lightrft.adapters.datasets import arithmetic_problems
from lightrft.entrypoints.config.sft_section import SftDataConfig
from lightrft.entrypoints.wiring.sft_data import build_sft_data
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer


def _trained_texts(tok: object, data: object) -> list[str]:
    return [
        tok.decode([t for t, m in zip(e.response_ids, e.loss_mask, strict=True) if m])  # type: ignore[attr-defined]
        for e in data  # type: ignore[attr-defined]
    ]


def test_builtin_rows_train_on_the_worked_answer_only() -> None:
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=4, seed=3), tok)
    assert data is not None and len(data) == 4
    rows = arithmetic_problems(4, 3, 1, "train")
    for example, row, trained in zip(data, rows, _trained_texts(tok, data), strict=True):
        # e.g. "5 + 3 = 8": the equation ends on the reference answer
        assert trained == f"{row['solution']}\n"  # the tiny template ends a turn with "\n"
        assert row["solution"].endswith(f"= {row['reference']}")
        prompt = tok.decode(list(example.prompt_ids))
        assert prompt.startswith("system: Reply with only the final number.\nuser: ")
        assert prompt.endswith("Answer with just the number.\nassistant: ")


def test_builtin_rows_can_train_on_the_bare_answer() -> None:
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=4, seed=3, builtin_completion="answer"), tok)
    answers = [row["reference"] for row in arithmetic_problems(4, 3, 1, "train")]
    assert _trained_texts(tok, data) == [f"{answer}\n" for answer in answers]


def test_builtin_sft_rows_never_hold_a_heldout_problem() -> None:
    """The SFT data of the pipeline example must not train on the RL demo's evaluation set."""
    from lightrft.adapters.datasets.arithmetic import in_split

    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=200, seed=0), tok)
    prompts = [tok.decode(list(example.prompt_ids)) for example in data]
    questions = [p.split("user: ", 1)[1].split(" Answer with", 1)[0] for p in prompts]
    assert not any(in_split(q, "heldout") for q in questions)


def test_max_samples_and_null_section() -> None:
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=6, max_samples=2), tok)
    assert data is not None and len(data) == 2 and data.stats.kept == 6
    assert build_sft_data(None, tok) is None


USER_ROWS = [
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    {"prompt": "1+1", "completion": "2"},
]


def prompts_of(tmp_path: Path, **section: object) -> list[str]:
    """The decoded prompts of USER_ROWS built through an ``sft.train_data`` section."""
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in USER_ROWS))
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(path=str(path), **section), tok)  # type: ignore[arg-type]
    assert data is not None
    return [tok.decode(list(example.prompt_ids)) for example in data]


def test_user_rows_get_no_system_prompt_by_default(tmp_path: Path) -> None:
    """A user's chat without a system turn is trained as written; no built-in instruction."""
    assert prompts_of(tmp_path) == ["user: hi\nassistant: ", "user: 1+1\nassistant: "]


def test_a_configured_system_prompt_reaches_prompt_completion_rows_only(tmp_path: Path) -> None:
    assert prompts_of(tmp_path, system_prompt="be brief") == [
        "user: hi\nassistant: ",
        "system: be brief\nuser: 1+1\nassistant: ",
    ]


def test_builtin_rows_take_a_configured_system_prompt() -> None:
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=2, system_prompt="be brief"), tok)
    assert data is not None
    for example in data:
        assert tok.decode(list(example.prompt_ids)).startswith("system: be brief\nuser: ")
