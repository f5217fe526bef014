"""The bad-input catalogue: one test per row of docs/troubleshooting.md.

Each test gives `lightrft` (in-process, on a tiny random model) one bad input and checks
what the user sees (exit status, the message naming the key / file / row, no traceback) and
what is kept. `test_every_row_has_a_test` ties the table and the tests together.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shlex
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import torch

from lightrft.adapters.checkpoint import LocalCheckpointStore, UnsafeCheckpointStateError
from lightrft.adapters.checkpoint import local_store as local_store_module
from lightrft.adapters.hf.loading import load_causal_lm
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.graceful_stop import EXIT_STOPPED
from lightrft.entrypoints.run_dir.directory import RunDirectoryLock
from tests.helpers.cli_runs import TINY

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "troubleshooting.md"
TOY = "tests.helpers.toy_rewards"


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """`main` points structlog at the captured stderr; put the quiet test setup back."""
    yield
    structlog.reset_defaults()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


class Cli:
    """Runs `lightrft` in-process; returns (exit status, stdout, stderr)."""

    def __init__(self, capsys: pytest.CaptureFixture[str], model: Path, tmp: Path) -> None:
        self.capsys, self.model, self.tmp = capsys, model, tmp
        self.run_dir = tmp / "run"

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    def train(self, *extra: str, run_dir: Path | None = None) -> tuple[int, str, str]:
        where = run_dir or self.run_dir
        return self(
            "train", "grpo", f"model.path={self.model}", f"logging.run_dir={where}", *TINY, *extra
        )

    def data(self, name: str, text: str, *extra: str) -> tuple[int, str, str]:
        path = self.tmp / name
        path.write_text(text)
        return self.train(f"data.train.path={path}", *extra)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], tiny_dir: Path, tmp_path: Path) -> Cli:
    return Cli(capsys, tiny_dir, tmp_path)


def _clean(code: int, err: str, expected: int = 2) -> str:
    """Asserts a handled error: the status and no traceback; returns stderr."""
    assert code == expected, err
    assert "Traceback" not in err
    return err


def _metric_steps(run_dir: Path) -> list[int]:
    return [
        json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]


# -- configuration --------------------------------------------------------------------------


def test_config_unknown_key(cli: Cli) -> None:
    assert "model.colour: unknown key" in _clean(*cli.train("model.colour=red")[::2])


def test_config_bad_choice(cli: Cli) -> None:
    err = _clean(*cli.train("algorithm.policy_loss=foo")[::2])
    assert "algorithm.policy_loss: Input should be 'ppo'" in err and "(got 'foo')" in err


def test_config_out_of_range(cli: Cli) -> None:
    err = _clean(*cli.train("optim.lr=-1")[::2])
    assert "optim.lr: Input should be greater than 0 (got -1)" in err


def test_config_wrong_type(cli: Cli) -> None:
    err = _clean(*cli.train("train.total_steps=many")[::2])
    assert "train.total_steps: Input should be a valid integer" in err


def test_config_several_mistakes_at_once(cli: Cli) -> None:
    err = _clean(*cli.train("model.colour=red", "optim.lr=-1")[::2])
    assert "model.colour: unknown key" in err and "optim.lr:" in err


def test_config_cross_field_group_size(cli: Cli) -> None:
    err = _clean(*cli.train("rollout.n_samples_per_prompt=1")[::2])
    assert "algorithm.advantage_estimator 'grpo' compares samples of a group" in err
    assert "rollout.n_samples_per_prompt must be >= 2" in err
    assert "{" not in err and len(err.splitlines()) == 2  # no dump of the whole config


def test_config_cross_field_mini_batch(cli: Cli) -> None:
    err = _clean(*cli.train("train.mini_batch_size=99")[::2])
    assert "train.mini_batch_size (99) exceeds the samples per step" in err and "{" not in err


def test_config_mini_batch_not_dividing_the_step(cli: Cli) -> None:
    err = _clean(*cli.train("rollout.prompts_per_step=3", "train.mini_batch_size=4")[::2])
    assert "train.mini_batch_size (4) does not divide the samples per step" in err
    assert "n_samples_per_prompt = 6)" in err and "would see 2 sample(s)" in err


def test_config_dapo_buffer_longer_than_the_responses(cli: Cli) -> None:
    code, _, err = cli("train", "dapo", f"model.path={cli.model}", *TINY)
    err = _clean(code, err)
    assert "reward.overlong_buffer (32) exceeds rollout.max_new_tokens (4)" in err


def test_config_file_missing(cli: Cli) -> None:
    err = _clean(*cli.train("--config", str(cli.tmp / "nope.yaml"))[::2])
    assert "nope.yaml does not exist" in err


def test_config_file_not_yaml(cli: Cli) -> None:
    path = cli.tmp / "bad.yaml"
    path.write_text("optim: {lr: [\n")
    assert "is not valid YAML" in _clean(*cli.train("--config", str(path))[::2])


def test_config_file_not_a_mapping(cli: Cli) -> None:
    path = cli.tmp / "list.yaml"
    path.write_text("- optim.lr=1\n")
    assert "must hold a mapping" in _clean(*cli.train("--config", str(path))[::2])


def test_config_unknown_flag(cli: Cli) -> None:
    err = _clean(*cli.train("--colour", "red")[::2])
    assert "unknown option --colour" in err and "key=value" in err


def test_config_flag_without_value(cli: Cli) -> None:
    assert "--n_samples_per_prompt: expected a value" in _clean(
        *cli.train("--n_samples_per_prompt")[::2]
    )


def test_config_unknown_algorithm(cli: Cli) -> None:
    with pytest.raises(SystemExit) as info:
        cli("train", "grpoo")
    assert info.value.code == 2
    assert "invalid choice: 'grpoo'" in cli.capsys.readouterr().err


def test_config_python_reward_without_function(cli: Cli) -> None:
    err = _clean(*cli.train("reward.sources=[{type: python}]")[::2])
    assert "reward.sources.0.function: Field required" in err


def test_config_duplicate_reward_names(cli: Cli) -> None:
    err = _clean(*cli.train("reward.sources=[{type: math}, {type: math}]")[::2])
    assert "reward source names must be unique" in err


def test_config_non_finite_float(cli: Cli) -> None:
    err = _clean(*cli.train("optim.lr=.inf", "rollout.temperature=.nan")[::2])
    assert "optim.lr: Input should be a finite number (got inf)" in err
    assert "rollout.temperature: Input should be a finite number (got nan)" in err


def test_config_file_is_a_directory(cli: Cli) -> None:
    err = _clean(*cli.train("--config", str(cli.tmp))[::2])
    assert f"config file {cli.tmp} is a directory; expected a YAML file" in err


def test_config_alias_bomb(cli: Cli) -> None:
    lines = ["a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    for before, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{before}"] * 9) + "]")  # 9**9 values
    path = cli.tmp / "bomb.yaml"
    path.write_text("\n".join([*lines, "optim: {lr: *i}"]) + "\n")
    err = _clean(*cli.train("--config", str(path))[::2])
    assert f"config file {path} is refused: its aliases (*name) expand to more than" in err
    assert len(err) < 1000


def test_config_huge_value_is_cut_in_the_message(cli: Cli) -> None:
    err = _clean(*cli.train("optim.lr=" + "9" * 5000)[::2])
    assert "optim.lr: Input should be a finite number (got '9999" in err and "9...9" in err
    assert len(err) < 1000


# -- model ----------------------------------------------------------------------------------


def _model_copy(cli: Cli, name: str) -> Path:
    path = cli.tmp / name
    shutil.copytree(cli.model, path)
    return path


def test_model_directory_missing(cli: Cli) -> None:
    code, _, err = cli("train", "grpo", f"model.path={cli.tmp / 'no-model'}", *TINY)
    assert "no-model does not exist" in _clean(code, err)


def test_model_weights_corrupt(cli: Cli) -> None:
    model = _model_copy(cli, "corrupt")
    (model / "model.safetensors").write_bytes(os.urandom(4096))
    code, _, err = cli(
        "train", "grpo", f"model.path={model}", f"logging.run_dir={cli.run_dir}", *TINY
    )
    err = _clean(code, err)
    assert f"{model / 'model.safetensors'} is not a readable safetensors file" in err
    assert "export the model again" in err


def test_model_weights_truncated(cli: Cli) -> None:
    model = _model_copy(cli, "truncated")
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    code, _, err = cli(
        "train", "grpo", f"model.path={model}", f"logging.run_dir={cli.run_dir}", *TINY
    )
    err = _clean(code, err)
    assert f"{weights} is truncated" in err and "export the model again" in err


def test_model_pickle_only(cli: Cli) -> None:
    model = _model_copy(cli, "pickled")
    (model / "model.safetensors").unlink()
    torch.save({"w": torch.zeros(1)}, model / "pytorch_model.bin")
    code, _, err = cli(
        "train", "grpo", f"model.path={model}", f"logging.run_dir={cli.run_dir}", *TINY
    )
    err = _clean(code, err)
    assert "holds only pickled weights (pytorch_model.bin)" in err
    assert "unpickling a file can run arbitrary code" in err and ".save_pretrained(" in err


def test_model_missing_shard(cli: Cli) -> None:
    model = _model_copy(cli, "sharded")
    index = {"metadata": {}, "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    code, _, err = cli(
        "train", "grpo", f"model.path={model}", f"logging.run_dir={cli.run_dir}", *TINY
    )
    assert "missing: model-00002-of-00002.safetensors" in _clean(code, err)


def test_model_custom_code_is_not_run(cli: Cli) -> None:
    model = _model_copy(cli, "remote")
    marker = cli.tmp / "custom-code-ran"
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    (model / "config.json").write_text(json.dumps(config))
    (model / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    load_causal_lm(model, torch.device("cpu"))  # trust_remote_code is off by default
    assert not marker.exists()


def test_model_flash_attention_unavailable(cli: Cli) -> None:
    err = _clean(*cli.train("model.attn_implementation=flash_attention_2")[::2])
    assert "flash_attention_2' needs the flash-attn package" in err and "use 'sdpa'" in err


def test_model_path_is_a_file(cli: Cli) -> None:
    config = cli.model / "config.json"
    code, _, err = cli("train", "grpo", f"model.path={config}", *TINY)
    err = _clean(code, err)
    assert f"model path {config} is a file; expected a model directory" in err


def _train_on(cli: Cli, model: Path) -> tuple[int, str]:
    code, _, err = cli(
        "train", "grpo", f"model.path={model}", f"logging.run_dir={cli.run_dir}", *TINY
    )
    return code, err


def test_model_without_weights(cli: Cli) -> None:
    model = _model_copy(cli, "no-weights")
    (model / "model.safetensors").unlink()
    err = _clean(*_train_on(cli, model))
    assert f"{model} holds no model weights: expected model.safetensors" in err
    assert "found chat_template.jinja, config.json" in err


def test_model_without_tokenizer_files(cli: Cli) -> None:
    model = _model_copy(cli, "no-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model / name).unlink()
    err = _clean(*_train_on(cli, model))
    assert f"{model} has no tokenizer files: expected tokenizer.json" in err
    assert "sentencepiece" not in err


def test_model_encoder_only(cli: Cli) -> None:
    from transformers import BertConfig, BertForMaskedLM

    model = cli.tmp / "bert"
    shape = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2}  # vocab: 259
    BertForMaskedLM(BertConfig(vocab_size=259, intermediate_size=32, **shape)).save_pretrained(
        model
    )
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(cli.model / name, model / name)
    err = _clean(*_train_on(cli, model))
    assert f"{model} holds a model without a causal-LM head (architectures BertForMaskedLM" in err
    assert not (cli.run_dir / "metrics.jsonl").exists()


# -- data -------------------------------------------------------------------------------------


def test_data_file_missing(cli: Cli) -> None:
    err = _clean(*cli.train(f"data.train.path={cli.tmp / 'none.jsonl'}")[::2])
    assert "none.jsonl does not exist" in err


def test_data_file_empty(cli: Cli) -> None:
    err = _clean(*cli.data("empty.jsonl", "")[::2])
    assert "empty.jsonl is empty: expected one JSON object per line" in err


def test_data_file_whitespace_only(cli: Cli) -> None:
    assert "blank.jsonl holds only whitespace" in _clean(*cli.data("blank.jsonl", "\n \n")[::2])


def test_data_line_not_json(cli: Cli) -> None:
    err = _clean(*cli.data("broken.jsonl", '{"prompt": "1+1?", "reference": "2"}\n{oops\n')[::2])
    assert "broken.jsonl line 2 is not valid JSON" in err


def test_data_line_not_an_object(cli: Cli) -> None:
    err = _clean(*cli.data("strings.jsonl", '"1+1?"\n')[::2])
    assert "strings.jsonl line 1 is a JSON string, not an object" in err


def test_data_unsupported_file_type(cli: Cli) -> None:
    err = _clean(*cli.data("rows.csv", "prompt,reference\n1+1?,2\n")[::2])
    assert "rows.csv: unsupported file type" in err


def test_data_missing_prompt_key(cli: Cli) -> None:
    rows = '{"prompt": "1+1?", "reference": "2"}\n{"question": "no prompt key", "reference": "1"}\n'
    err = _clean(*cli.data("keys.jsonl", rows)[::2])
    assert "keys.jsonl row 1:" in err and "'prompt'" in err


def test_data_null_reference(cli: Cli) -> None:
    err = _clean(*cli.data("null.jsonl", '{"prompt": "1+1?", "reference": null}\n')[::2])
    assert "null.jsonl row 0: no value (null or absent in this row) for key 'reference'" in err


def test_data_empty_prompt(cli: Cli) -> None:
    err = _clean(*cli.data("blank_prompt.jsonl", '{"prompt": "  ", "reference": "1"}\n')[::2])
    assert "blank_prompt.jsonl row 0: empty prompt in 'prompt'" in err


def test_data_prompt_wrong_type(cli: Cli) -> None:
    err = _clean(*cli.data("number.jsonl", '{"prompt": 7, "reference": "1"}\n')[::2])
    assert "expected a string or a list of chat messages, got int" in err


def test_data_chat_unknown_role(cli: Cli) -> None:
    row = {"prompt": [{"role": "wizard", "content": "1+1?"}], "reference": "2"}
    err = _clean(*cli.data("roles.jsonl", json.dumps(row) + "\n")[::2])
    assert "roles.jsonl row 0: message 0 has unknown role 'wizard'" in err
    assert "expected system, user, assistant, tool" in err


def test_data_chat_without_user_turn(cli: Cli) -> None:
    row = {"prompt": [{"role": "system", "content": "Be brief."}], "reference": "2"}
    err = _clean(*cli.data("system_only.jsonl", json.dumps(row) + "\n")[::2])
    assert "system_only.jsonl row 0: no user message in the chat 'prompt'" in err


def test_data_reference_of_the_wrong_type(cli: Cli) -> None:
    row = {"prompt": "1+1?", "reference": {"a": [1, 2]}}
    err = _clean(*cli.data("ref.jsonl", json.dumps(row) + "\n")[::2])
    assert "ref.jsonl row 0: expected a string or a number, got dict, for key 'reference'" in err


def test_data_sft_chat_roles_checked(cli: Cli) -> None:
    def chat(*turns: tuple[str, str]) -> str:
        return json.dumps({"messages": [{"role": r, "content": c} for r, c in turns]}) + "\n"

    rows = (
        chat(("user", "1+1?"), ("assistant", "2"))
        + chat(("assistant", "2"), ("user", "1+1?"))
        + chat(("user", "1+1?"), ("wizard", "2"))
        + chat(("user", "1+1?"), ("assistant", " "))
    )
    data = cli.tmp / "chats.jsonl"
    data.write_text(rows)
    sft = ["sft.eval_data=null", "logging.progress=false"]
    code, _, err = cli(
        "sft", "--model", str(cli.model), "--data", str(data), "--run-dir", str(cli.run_dir), *sft
    )
    err = _clean(code, err)
    assert "3 bad rows:" in err
    assert f"{data} row 1: message 0 is 'assistant' before any user message" in err
    assert f"{data} row 2: message 1 has unknown role 'wizard'" in err
    assert f"{data} row 3: message 1 is an empty assistant turn in 'messages'" in err


def test_data_bad_rows_skipped_on_request(cli: Cli) -> None:
    rows = (
        "".join(json.dumps({"prompt": f"{i}+1?", "reference": str(i + 1)}) + "\n" for i in range(4))
        + '{"prompt": "no reference"}\n'
    )
    code, _, err = cli.data(
        "mixed.jsonl", rows, "data.train.on_bad_row=skip", "train.total_steps=1"
    )
    assert code == 0, err
    assert _metric_steps(cli.run_dir) == [0, 1]  # step 0: what building the data skipped
    first = json.loads((cli.run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert first["data/skipped_rows"] == 1 and first["data/train_rows"] == 4
    summary = json.loads((cli.run_dir / "summary.json").read_text())
    assert summary["skipped_rows"] == 1 and summary["train_rows"] == 4
    assert "data.skipped_rows" in err and "skipped=1" in err


def _rows(count: int, prompt: str = "{i}+1?") -> str:
    return "".join(
        json.dumps({"prompt": prompt.format(i=i), "reference": str(i + 1)}) + "\n"
        for i in range(count)
    )


def test_data_not_utf8(cli: Cli) -> None:
    path = cli.tmp / "latin1.jsonl"
    path.write_bytes(
        _rows(1).encode() + '{"prompt": "caf\u00e9?", "reference": "1"}\n'.encode("latin-1")
    )
    err = _clean(*cli.train(f"data.train.path={path}")[::2])
    assert f"{path} line 2 is not UTF-8 text (byte 15 of the line)" in err


def test_data_bad_lines_skipped_on_request(cli: Cli) -> None:
    path = cli.tmp / "lines.jsonl"
    path.write_bytes(_rows(4).encode() + b"{oops\n" + b'{"prompt": "\xff"}\n' + b"[1]\n")
    code, _, err = cli.train(f"data.train.path={path}", "data.train.on_bad_row=skip")
    assert code == 0, err
    summary = json.loads((cli.run_dir / "summary.json").read_text())
    assert summary["skipped_rows"] == 3 and summary["train_rows"] == 4
    assert "data.skipped_rows" in err and "skipped=3" in err


def test_data_long_prompts_are_counted(cli: Cli) -> None:
    long = "Some context that is long. " * 10 + "Question {i}: what is {i}+1?"
    code, _, err = cli.data("long.jsonl", _rows(4, long), "data.train.max_prompt_length=32")
    assert code == 0, err
    assert err.count("data.truncated_prompts") == 1 and "truncated=4" in err
    first = json.loads((cli.run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert first["step"] == 0 and first["data/truncated_prompts"] == 4


def test_data_long_prompt_refused_on_request(cli: Cli) -> None:
    long = "Some context that is long. " * 10 + "Question {i}: what is {i}+1?"
    options = ("data.train.max_prompt_length=32", "data.train.truncate=error")
    err = _clean(*cli.data("long.jsonl", _rows(1, long), *options)[::2])
    assert re.search(
        r"long.jsonl row 0: prompt of \d+ tokens is longer than max_prompt_length \(32\) "
        r"\(truncate=error\) in 'prompt'",
        err,
    )


# -- run directory ----------------------------------------------------------------------------


def test_run_dir_in_use(cli: Cli) -> None:
    with RunDirectoryLock(cli.run_dir):
        err = _clean(*cli.train()[::2])
    assert f"run directory {cli.run_dir} is in use by another lightrft process" in err
    assert f"pid {os.getpid()}" in err
    assert not (cli.run_dir / "metrics.jsonl").exists()


def test_run_dir_stale_lock_is_ignored(cli: Cli) -> None:
    cli.run_dir.mkdir()
    (cli.run_dir / ".lightrft.lock").write_text("")
    (cli.run_dir / ".lightrft-owner.json").write_text('{"pid": 999999, "host": "gone"}')
    code, _, err = cli.train("train.total_steps=1")
    assert code == 0, err
    assert not (cli.run_dir / ".lightrft-owner.json").exists()  # released at the end


def test_run_dir_holds_a_previous_run(cli: Cli) -> None:
    assert cli.train("train.total_steps=1", "checkpoint.every=1")[0] == 0
    before = (cli.run_dir / "metrics.jsonl").read_text()
    err = _clean(*cli.train()[::2])
    assert "holds a previous run" in err and "--resume" in err and "--overwrite" in err
    assert (cli.run_dir / "metrics.jsonl").read_text() == before


def test_run_dir_overwrite_moves_it_aside(cli: Cli) -> None:
    assert cli.train("train.total_steps=1", "checkpoint.every=1")[0] == 0
    code, _, err = cli.train("--overwrite")
    assert code == 0, err
    (aside,) = cli.tmp.glob("run.old-*")
    assert _metric_steps(aside) == [1] and (aside / "checkpoints" / "step_00000001").is_dir()
    assert _metric_steps(cli.run_dir) == [1, 2]


def test_run_dir_resume_with_nothing_to_resume(cli: Cli) -> None:
    err = _clean(*cli.train("--resume", run_dir=cli.tmp / "typo")[::2])
    assert "nothing to resume in" in err and "typo" in err and "--resume=auto" in err


def test_run_dir_resume_auto_starts_fresh(cli: Cli) -> None:
    code, _, err = cli.train("--resume=auto", "train.total_steps=1")
    assert code == 0, err
    assert _metric_steps(cli.run_dir) == [1]


def test_run_dir_resume_does_not_repeat_metrics(cli: Cli) -> None:
    assert cli.train("checkpoint.every=1", "train.total_steps=3")[0] == 0
    # as if killed after logging step 3 but before its checkpoint was committed
    shutil.rmtree(cli.run_dir / "checkpoints" / "step_00000003")
    code, _, err = cli.train("checkpoint.every=1", "train.total_steps=3", "--resume")
    assert code == 0, err
    assert _metric_steps(cli.run_dir) == [1, 2, 3]


def test_report_of_a_missing_run(cli: Cli) -> None:
    code, _, err = cli("report", str(cli.tmp / "nowhere"))
    assert "nowhere does not exist" in _clean(code, err)


# -- checkpoints --------------------------------------------------------------------------------


def _damage_newest(cli: Cli) -> Path:
    assert cli.train("checkpoint.every=1", "train.total_steps=2")[0] == 0
    state = cli.run_dir / "checkpoints" / "step_00000002" / "state.pt"
    state.write_bytes(state.read_bytes()[:-100])
    return state


def test_checkpoint_newest_damaged_falls_back(cli: Cli) -> None:
    state = _damage_newest(cli)
    code, _, err = cli.train("checkpoint.every=1", "train.total_steps=2", "--resume")
    assert code == 0, err
    assert "checkpoint.damaged" in err and str(state) in err
    assert re.search(r"checkpoint.resumed\s+step=1", err)
    assert _metric_steps(cli.run_dir) == [1, 2]


def test_checkpoint_all_damaged(cli: Cli) -> None:
    _damage_newest(cli)
    first = cli.run_dir / "checkpoints" / "step_00000001" / "state.pt"
    first.write_bytes(b"not a checkpoint")
    code, _, err = cli.train("checkpoint.every=1", "train.total_steps=2", "--resume")
    err = _clean(code, err, expected=1)
    assert "every checkpoint is damaged" in err and str(first) in err


def test_checkpoints_verify_lists_their_state(cli: Cli) -> None:
    state = _damage_newest(cli)
    code, out, _ = cli("checkpoints", "verify", str(cli.run_dir))
    assert code == 1
    lines = out.splitlines()
    assert re.match(r"intact\s+step\s+1\s", lines[0])
    assert re.match(r"damaged\s+step\s+2\s", lines[1]) and str(state) in lines[2]


def test_checkpoint_newest_without_its_state_file(cli: Cli) -> None:
    assert cli.train("checkpoint.every=1", "train.total_steps=2")[0] == 0
    state = cli.run_dir / "checkpoints" / "step_00000002" / "state.pt"
    state.unlink()
    code, out, _ = cli("checkpoints", "verify", str(cli.run_dir))
    assert code == 1
    lines = out.splitlines()
    assert re.match(r"intact\s+step\s+1\s", lines[0])
    assert re.match(r"damaged\s+step\s+2\s", lines[1]) and lines[2].strip() == f"{state}: missing"
    code, _, err = cli.train("checkpoint.every=1", "train.total_steps=2", "--resume")
    assert code == 0, err
    assert err.count("checkpoint.damaged") == 1 and str(state) in err and "falls_back_to=1" in err
    assert re.search(r"checkpoint.resumed\s+step=1", err)
    assert _metric_steps(cli.run_dir) == [1, 2]


class _Tampered:
    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (os.getcwd, ())


def test_checkpoint_tampered(cli: Cli) -> None:
    assert cli.train("checkpoint.every=1", "train.total_steps=1")[0] == 0
    directory = cli.run_dir / "checkpoints" / "step_00000001"
    torch.save({"policy": _Tampered()}, directory / "state.pt")
    meta = json.loads((directory / "metadata.json").read_text())
    del meta["files"]  # rewritten as a whole, checksums and all
    (directory / "metadata.json").write_text(json.dumps(meta))
    code, _, err = cli.train("checkpoint.every=1", "train.total_steps=1", "--resume")
    err = _clean(code, err, expected=1)
    assert f"{directory / 'state.pt'} holds objects that safe loading refuses" in err
    assert "GLOBAL" in err and "trusted source" not in err and "weights_only` set to" not in err
    code, out, err = cli("checkpoints", "verify", str(cli.run_dir))
    assert code == 1 and "Traceback" not in err
    assert re.match(r"damaged\s+step\s+1\s", out) and "safe loading refuses" in out


def test_checkpoint_state_not_weights_only(tmp_path: Path) -> None:
    import numpy as np

    with pytest.raises(
        UnsafeCheckpointStateError, match=r"state\['stats'\]\['mean'\] holds a numpy"
    ):
        LocalCheckpointStore(tmp_path).save(1, {"stats": {"mean": np.float64(0.5)}})
    assert LocalCheckpointStore(tmp_path).steps() == []


def test_checkpoint_disk_full(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = torch.save

    def full_disk_at_step_2(obj, f, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "step_00000002" in str(getattr(f, "name", f)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(local_store_module.torch, "save", full_disk_at_step_2)
    code, _, err = cli.train("checkpoint.every=1")
    monkeypatch.undo()
    err = _clean(code, err, expected=1)
    assert "cannot write the checkpoint of step 2" in err and "No space left" in err
    assert "newest: step 1" in err and "--resume" in err
    code, _, err = cli.train("checkpoint.every=1", "--resume")
    assert code == 0, err
    assert _metric_steps(cli.run_dir) == [1, 2]


def _history(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def _same_shape_other_weights(model: Path, to: Path) -> Path:
    from safetensors.torch import load_file, save_file

    shutil.copytree(model, to)
    weights = load_file(to / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + 0.01
    save_file(weights, to / "model.safetensors", metadata={"format": "pt"})
    return to


def _run_records(run_dir: Path) -> dict[str, str]:
    return {
        p.name: p.read_text() for p in run_dir.iterdir() if p.name.startswith(("config", "hist"))
    }


def test_resume_with_another_model_of_the_same_shape(cli: Cli) -> None:
    assert cli.train("checkpoint.every=1", "train.total_steps=1")[0] == 0
    records = _run_records(cli.run_dir)
    other = _same_shape_other_weights(cli.model, cli.tmp / "other")
    err = _clean(*cli.train(f"model.path={other}", "checkpoint.every=1", "--resume")[::2])
    assert f"cannot resume {cli.run_dir}" in err
    assert f'model.path: "{cli.model}" -> "{other}"' in err
    assert re.search(r'model.weights: "xxh3_128:\w+\.\.\." -> "xxh3_128:\w+\.\.\."', err)
    assert "--resume-changing model.path model.weights" in err
    assert _run_records(cli.run_dir) == records  # config.yaml and history untouched


def test_resume_with_a_model_of_another_shape(cli: Cli) -> None:
    """RD11b: --resume-changing model.path model.weights to a model of another shape."""
    from transformers import LlamaForCausalLM

    from tests.unit.adapters.hf.hf_tiny import tiny_config, tiny_tokenizer

    assert cli.train("checkpoint.every=1", "train.total_steps=1")[0] == 0
    records = _run_records(cli.run_dir)
    config = tiny_config()
    config.intermediate_size *= 2
    other = cli.tmp / "wider"
    LlamaForCausalLM(config).save_pretrained(other)
    tiny_tokenizer().save_pretrained(other)
    code, _, err = cli.train(
        f"model.path={other}",
        "checkpoint.every=1",
        "--resume",
        "--resume-changing",
        "model.path",
        "model.weights",
    )
    err = _clean(code, err)
    assert "size mismatch" not in err
    (message,) = [line for line in err.splitlines() if line.startswith("lightrft: error:")]
    assert f"the checkpoint of step 1 in {cli.run_dir / 'checkpoints'} do not fit" in message
    assert re.search(r"tensor \S+ has shape \[\d+, \d+\] in the checkpoint and", message)
    assert f"model.path ({other}) must name a model of the checkpoint's architecture" in message
    assert _run_records(cli.run_dir) == records  # config.yaml and history untouched


def test_resume_as_another_algorithm_and_settings(cli: Cli) -> None:
    assert cli.train("checkpoint.every=1", "train.total_steps=1")[0] == 0
    lr = _history(cli.run_dir)[0]["fingerprint"]["optim.lr"]  # type: ignore[index]
    code, _, err = cli(
        "train",
        "dapo",
        f"model.path={cli.model}",
        f"logging.run_dir={cli.run_dir}",
        *TINY,
        f"optim.lr={lr * 50}",
        "rollout.n_samples_per_prompt=4",
        "reward.overlong_buffer=2",  # within TINY's rollout.max_new_tokens
        "--resume",
    )
    err = _clean(code, err)
    assert 'algorithm.policy_loss: "ppo" -> "dapo"' in err
    assert f"optim.lr: {lr} -> {lr * 50}" in err
    assert "rollout.n_samples_per_prompt: 2 -> 4" in err
    assert len(_history(cli.run_dir)) == 1 and not list(cli.run_dir.glob("config.2*.yaml"))


def test_resume_changing_a_key_on_purpose(cli: Cli) -> None:
    assert cli.train("checkpoint.every=1", "train.total_steps=1")[0] == 0
    first = (cli.run_dir / "config.yaml").read_text()
    code, _, err = cli.train(
        "checkpoint.every=1", "optim.lr=2e-6", "--resume", "--resume-changing", "optim.lr"
    )
    assert code == 0, err
    assert (cli.run_dir / "config.yaml").read_text() == first  # the first config is kept
    start, resume = _history(cli.run_dir)
    assert start["event"] == "start" and resume["event"] == "resume" and resume["step"] == 1
    assert resume["changed"] == {"optim.lr": [start["fingerprint"]["optim.lr"], 2e-6]}  # type: ignore[index]
    assert resume["stated"] == ["optim.lr"]
    assert "lr: 2.0e-06" in (cli.run_dir / str(resume["config"])).read_text()
    assert "run.resumed_with_changes" in err
    assert _metric_steps(cli.run_dir) == [1, 2]


def test_sft_into_a_previous_run(cli: Cli) -> None:
    assert cli.train("train.total_steps=1", "checkpoint.export_final=true")[0] == 0
    weights = (cli.run_dir / "final_model" / "model.safetensors").read_bytes()
    sft = ["sft.train_data.num_builtin=8", "sft.eval_data=null", "logging.progress=false"]
    code, _, err = cli("sft", "--model", str(cli.model), "--run-dir", str(cli.run_dir), *sft)
    err = _clean(code, err)
    assert "holds a previous run" in err and "--resume" in err and "--overwrite" in err
    assert (cli.run_dir / "final_model" / "model.safetensors").read_bytes() == weights
    assert _metric_steps(cli.run_dir) == [1]


def test_sft_resuming_an_rl_run(cli: Cli) -> None:
    """F07c: ``lightrft sft --resume`` into a GRPO run's directory."""
    assert cli.train("train.total_steps=1", "checkpoint.every=1")[0] == 0
    before = {p.name: p.read_bytes() for p in cli.run_dir.rglob("*") if p.is_file()}
    sft = [
        "sft.train_data.num_builtin=8",
        "sft.batch_size=4",
        "sft.eval_data=null",
        "logging.progress=false",
    ]
    code, _, err = cli(
        "sft", "--model", str(cli.model), "--run-dir", str(cli.run_dir), *sft, "--resume",
        "--resume-changing", "optim.lr", "optim.lr=2e-6",
    )  # fmt: skip
    err = _clean(code, err)
    (message,) = [line for line in err.splitlines() if line.startswith("lightrft: error:")]
    assert f"cannot resume {cli.run_dir} with lightrft sft: it holds an RL run" in message
    assert "sft.start" not in err  # refused before the model loaded
    assert {p.name: p.read_bytes() for p in cli.run_dir.rglob("*") if p.is_file()} == before


def test_rm_train_into_a_previous_run(cli: Cli) -> None:
    assert cli.train("train.total_steps=1")[0] == 0
    rm = ["rm", "train", "--output", str(cli.run_dir), "--model", str(cli.model)]
    err = _clean(*cli(*rm, "--num-synthetic", "20")[::2])
    assert "holds a previous run" in err and "--overwrite" in err
    assert not (cli.run_dir / "model").exists()


def _full_disk(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _next_command(err: str) -> list[str]:
    """The command the message says to run (the words after ``lightrft``)."""
    line = err.split("then run: ")[1].splitlines()[0]
    return shlex.split(line)[1:]


def test_final_export_disk_full(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers.modeling_utils

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", _full_disk)
    code, _, err = cli.train("checkpoint.export_final=true")  # no checkpoint.every
    monkeypatch.undo()
    err = _clean(code, err, expected=1)
    assert f"cannot write the final model to {cli.run_dir / 'final_model'}" in err
    assert "No space left on device" in err and "intact" not in err
    assert f"checkpoint of step 2 in {cli.run_dir / 'checkpoints'}" in err
    assert sorted(p.name for p in cli.run_dir.iterdir() if "final_model" in p.name) == []
    assert LocalCheckpointStore(cli.run_dir / "checkpoints").steps() == [2]
    command = _next_command(err)
    assert command[:2] == ["train", "grpo"] and command[-1] == "--resume"
    code, _, err = cli(*command)
    assert code == 0, err
    assert (cli.run_dir / "final_model" / "model.safetensors").is_file()
    assert _metric_steps(cli.run_dir) == [1, 2]


def test_disk_full_while_logging_without_checkpoints(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RD16: metrics.jsonl on a full disk (/dev/full), checkpoint.every unset."""
    from lightrft.adapters.tracking.jsonl_tracker import JsonlTracker

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    full = cli.tmp / "full.jsonl"
    full.symlink_to("/dev/full")
    monkeypatch.setattr(JsonlTracker, "metrics_path", property(lambda self: full))
    code, _, err = cli.train("checkpoint.every=null")
    monkeypatch.undo()
    err = _clean(code, err, expected=1)
    (message,) = [line for line in err.splitlines() if line.startswith("lightrft: error:")]
    assert f"cannot write {full} (No space left on device)" in message
    assert "This run has no checkpoint, so there is nothing to resume from" in message
    assert "--resume" not in message and "checkpoint.every=N" in message
    assert not LocalCheckpointStore(cli.run_dir / "checkpoints").steps()
    sft = ["sft.train_data.num_builtin=8", "sft.batch_size=4", "logging.progress=false"]
    monkeypatch.setattr(JsonlTracker, "metrics_path", property(lambda self: full))
    code, _, err = cli("sft", "--model", str(cli.model), "--run-dir", str(cli.tmp / "s"), *sft)
    monkeypatch.undo()
    (message,) = [line for line in _clean(code, err, 1).splitlines() if "error:" in line]
    assert f"cannot write {full} (No space left on device)" in message  # lightrft sft too
    assert "nothing to resume from: start it again with lightrft sft" in message


def test_final_export_disk_full_and_no_checkpoint(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers.modeling_utils

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", _full_disk)
    monkeypatch.setattr(local_store_module.torch, "save", _full_disk)
    code, _, err = cli.train("checkpoint.export_final=true")
    monkeypatch.undo()
    err = _clean(code, err, expected=1)
    (message,) = [line for line in err.splitlines() if line.startswith("lightrft: error:")]
    assert "no checkpoint could be written either: there is none" in message
    assert "training is lost" in message and "checkpoint of step" not in message
    assert "start again: lightrft train grpo" in message and message.endswith("--overwrite")
    assert "export.final_checkpoint_failed" in err  # the log says why
    assert not (cli.run_dir / "final_model").exists()


def test_rm_export_disk_full(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers.modeling_utils

    out = cli.tmp / "rm"
    rm = ["rm", "train", "--output", str(out), "--model", str(cli.model), "--num-synthetic", "20"]
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", _full_disk)
    code, _, err = cli(*rm, "--total-steps", "1", "--micro-batch-size", "16")
    monkeypatch.undo()
    err = _clean(code, err, expected=1)
    assert f"cannot write the final model to {out / 'model'}" in err
    assert f"checkpoint of step 1 in {out / 'checkpoints'}" in err
    command = _next_command(err)
    assert command[:2] == ["rm", "train"] and command[-1] == "--resume"
    code, _, err = cli(*command)
    assert code == 0, err
    assert (out / "model" / "model.safetensors").is_file()


# -- rewards --------------------------------------------------------------------------------------


def test_reward_function_always_fails(cli: Cli) -> None:
    source = f"reward.sources=[{{type: python, name: broken, function: '{TOY}:always_raises'}}]"
    code, _, err = cli.train(source, "reward.failure_patience=2", "train.total_steps=4")
    err = _clean(code, err, expected=1)
    assert "reward source 'broken' (100% of step 2's samples) failed" in err
    assert err.count("reward.function.failed") == 3 * 2  # 3 per step, then the summary
    assert err.count("reward.function.failures") == 2
    assert LocalCheckpointStore(cli.run_dir / "checkpoints").steps() == [1]


def test_reward_function_returns_nan(cli: Cli) -> None:
    source = f"reward.sources=[{{type: python, name: nan, function: '{TOY}:returns_nan'}}]"
    code, _, err = cli.train(source, "reward.stop_on_failures=false")
    assert code == 0, err
    rows = [json.loads(line) for line in (cli.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["reward/nan/failure_rate"] for r in rows] == [1.0, 1.0]
    assert "reward.function.bad_value" in err


def test_reward_function_returns_a_huge_number(cli: Cli) -> None:
    source = f"reward.sources=[{{type: python, name: big, function: '{TOY}:returns_huge'}}]"
    code, _, err = cli.train(source, "reward.stop_on_failures=false")
    assert code == 0, err
    rows = [json.loads(line) for line in (cli.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["reward/big/failure_rate"] for r in rows] == [1.0, 1.0]
    assert "reward.function.bad_value" in err and "Traceback" not in err


class _FlakyRewardService:
    """An HTTP reward service on a free port: the first ``good`` requests are scored 0.5,
    later ones get HTTP 500 with an HTML page."""

    def __init__(self, good: int) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        served = {"count": 0}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server hook's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                served["count"] += 1
                ok = served["count"] <= good
                reply = (
                    json.dumps({"scores": [0.5] * len(body["samples"])})
                    if ok
                    else "<html>\n<body><h1>500 Internal Server Error</h1></body>\n</html>"
                )
                self.send_response(200 if ok else 500)
                self.send_header("Content-Type", "application/json" if ok else "text/html")
                self.end_headers()
                self.wfile.write(reply.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _FlakyRewardService:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_remote_reward_fails(cli: Cli) -> None:
    with _FlakyRewardService(good=1) as service:
        source = (
            f"reward.sources=[{{type: remote, url: '{service.url}', max_attempts: 2, "
            "backoff_base_s: 0, backoff_max_s: 0}]"
        )
        code, _, err = cli.train(source, "train.total_steps=3")
    err = _clean(code, err, expected=1)
    (message,) = [line for line in err.splitlines() if line.startswith("lightrft: error:")]
    assert f"reward source 'remote' cannot score: reward service {service.url} failed 2" in message
    assert "HTTP 500: <html> <body><h1>500 Internal Server Error" in message
    assert message.endswith("fix the source, then resume with --resume")
    assert LocalCheckpointStore(cli.run_dir / "checkpoints").steps() == [1]  # before step 2


def test_remote_reward_server_down(cli: Cli) -> None:
    source = "reward.sources=[{type: remote, url: 'http://127.0.0.1:9', max_attempts: 1}]"
    err = _clean(*cli.train(source)[::2], expected=1)
    assert "reward source 'remote' cannot score: reward service http://127.0.0.1:9 failed" in err
    assert "cannot reach it (ConnectError" in err


def test_reward_function_not_importable(cli: Cli) -> None:
    source = "reward.sources=[{type: python, function: 'no_such_module:score'}]"
    err = _clean(*cli.train(source)[::2])
    assert "cannot load reward function 'no_such_module:score'" in err


# -- faults -------------------------------------------------------------------------------------------


def test_sigterm_stops_after_a_checkpoint(cli: Cli) -> None:
    metrics = cli.run_dir / "metrics.jsonl"

    def signal_after_first_step() -> None:
        deadline = time.monotonic() + 60
        while not metrics.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=signal_after_first_step)
    sender.start()
    code, out, err = cli.train("train.total_steps=50")
    sender.join()
    assert code == EXIT_STOPPED, err
    summary = json.loads(out[out.index("{") :])
    stopped_at = summary["steps"]
    assert summary["stopped_early"] and 1 <= stopped_at < 50
    assert LocalCheckpointStore(cli.run_dir / "checkpoints").steps() == [stopped_at]
    code, _, err = cli.train(f"train.total_steps={stopped_at + 1}", "--resume")
    assert code == 0, err
    assert _metric_steps(cli.run_dir) == list(range(1, stopped_at + 2))


def test_debug_shows_the_traceback(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = cli.train(f"data.train.path={cli.tmp / 'none.jsonl'}")[2]
    assert "Traceback" not in plain and "--debug" in plain
    debug = cli(
        "--debug",
        "train",
        "grpo",
        f"model.path={cli.model}",
        *TINY,
        f"data.train.path={cli.tmp / 'none.jsonl'}",
    )[2]
    monkeypatch.setenv("LIGHTRFT_DEBUG", "1")
    env = cli.train(f"data.train.path={cli.tmp / 'none.jsonl'}")[2]
    for err in (debug, env):
        assert "Traceback (most recent call last)" in err and "none.jsonl does not exist" in err


# -- the table ----------------------------------------------------------------------------------------


def _table_tests() -> list[str]:
    rows = [line for line in TABLE.read_text().splitlines() if line.startswith("| ")]
    return [m.group(1) for line in rows if (m := re.search(r"`(tests/[^`]+::\w+)`", line))]


def test_every_row_has_a_test() -> None:
    named = _table_tests()
    assert len(named) >= 35
    assert len(set(named)) == len(named), "a test is named by two rows"
    for ref in named:
        path, name = ref.split("::")
        source = (ROOT / path).read_text()
        assert re.search(rf"^def {name}\(", source, re.MULTILINE), f"{ref} does not exist"
    here = {n for n in globals() if n.startswith("test_") and n != "test_every_row_has_a_test"}
    listed = {ref.split("::")[1] for ref in named if ref.startswith("tests/e2e/test_bad_inputs.py")}
    assert here == listed, f"tests without a row: {sorted(here - listed)}"
