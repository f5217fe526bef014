"""SFT data from the config: the built-in arithmetic rows and max_samples."""

from __future__ import annotations

from lightrft.adapters.datasets import arithmetic_problems
from lightrft.entrypoints.config.sft_section import SftDataConfig
from lightrft.entrypoints.wiring.sft_data import build_sft_data
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer


def test_builtin_rows_train_on_the_answer_only() -> None:
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=4, seed=3), tok)
    assert data is not None and len(data) == 4
    answers = [row["reference"] for row in arithmetic_problems(4, 3, 1)]
    for example, answer in zip(data, answers, strict=True):
        trained = [t for t, m in zip(example.response_ids, example.loss_mask, strict=True) if m]
        assert tok.decode(trained) == f"{answer}\n"  # the tiny template ends a turn with "\n"
        prompt = tok.decode(list(example.prompt_ids))
        assert prompt.startswith("system: Reply with only the final number.\nuser: ")
        assert prompt.endswith("Answer with just the number.\nassistant: ")


def test_max_samples_and_null_section() -> None:
    tok = tiny_tokenizer()
    data = build_sft_data(SftDataConfig(num_builtin=6, max_samples=2), tok)
    assert data is not None and len(data) == 2 and data.stats.kept == 6
    assert build_sft_data(None, tok) is None
