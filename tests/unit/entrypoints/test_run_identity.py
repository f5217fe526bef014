"""What makes a run: the keys compared on resume, the weights digest, the refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
import xxhash

from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.run_dir.identity import (
    RL_IDENTITY,
    RM_IDENTITY,
    SFT_IDENTITY,
    WEIGHTS_KEY,
    ResumeIdentityError,
    changes,
    check_resume,
    check_stated_keys,
    flatten,
    weights_digest,
)


def _rl(*overrides: str, algorithm: str = "grpo") -> dict[str, object]:
    config = load_config(None, list(overrides), algorithm=algorithm)
    return RL_IDENTITY.select(flatten(config.model_dump(mode="json")))


def test_the_issue_case_grpo_resumed_as_dapo_with_lr_x50_and_another_group_size() -> None:
    old = _rl("optim.lr=1e-6", "rollout.n_samples_per_prompt=4")
    new = _rl("optim.lr=5e-5", "rollout.n_samples_per_prompt=8", algorithm="dapo")
    found = changes(old, new)
    assert found["optim.lr"] == (1e-6, 5e-5)
    assert found["rollout.n_samples_per_prompt"] == (4, 8)
    assert found["algorithm.policy_loss"] == ("ppo", "dapo")


def test_performance_run_length_and_logging_keys_are_not_compared() -> None:
    old = _rl()
    new = _rl(
        "train.total_steps=99",
        "train.micro_batch_size=1",
        "model.attn_implementation=eager",
        "model.gradient_checkpointing=true",
        "rollout.forward_micro_batch_size=3",
        "logging.run_dir=elsewhere",
        "eval.every=3",
        "checkpoint.every=2",
        "reward.failure_patience=9",
        "reward.max_concurrent_sources=1",
        "reward.source_timeout_s=5",
    )
    assert changes(old, new) == {}


@pytest.mark.parametrize(
    "override",
    [
        "model.path=/other",
        "model.lora.rank=8",
        "model.dtype=bf16",
        "algorithm.kl_coef=0.1",
        "optim.weight_decay=0.1",
        "rollout.prompts_per_step=3",
        "rollout.max_new_tokens=17",
        "rollout.temperature=0.5",
        "train.mini_batch_size=8",
        "train.seed=3",
        "reward.overlong_buffer=4",
        "data.train.path=rows.jsonl",
        "data.train.max_prompt_length=64",
    ],
)
def test_every_key_that_changes_the_optimisation_is_compared(override: str) -> None:
    key = override.split("=")[0]
    assert list(changes(_rl(), _rl(override))) == [key]


def test_the_teacher_of_a_distillation_run_is_compared() -> None:
    old = _rl("algorithm.advantage_estimator=opd", "teacher.path=/a")
    new = _rl("algorithm.advantage_estimator=opd", "teacher.path=/b")
    assert changes(old, new) == {"teacher.path": ("/a", "/b")}


def test_sft_and_rm_compare_their_own_keys() -> None:
    base = flatten(load_config(None, []).model_dump(mode="json"))
    assert SFT_IDENTITY.compares("sft.batch_size") and SFT_IDENTITY.compares("sft.train_data.path")
    assert not SFT_IDENTITY.compares("sft.micro_batch_size")
    assert not SFT_IDENTITY.compares("sft.eval_data.path")
    assert not SFT_IDENTITY.compares("algorithm.policy_loss")  # no RL in SFT
    assert "optim.lr" in SFT_IDENTITY.select(base)
    assert RM_IDENTITY.compares("lr") and RM_IDENTITY.compares("train.batch_size")
    assert not RM_IDENTITY.compares("train.micro_batch_size") and not RM_IDENTITY.compares("output")


def test_weights_digest_hashes_whole_files_not_only_their_shape(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for model in (a, b):
        model.mkdir()
        (model / "config.json").write_text("{}")
        (model / "model.safetensors").write_bytes(bytes(range(256)) * 4)
    assert weights_digest(a) == weights_digest(b)  # the same weights under another path
    flipped = bytearray((b / "model.safetensors").read_bytes())
    flipped[-1] ^= 1  # same size, same header: another model of the same shape
    (b / "model.safetensors").write_bytes(bytes(flipped))
    assert weights_digest(a) != weights_digest(b)
    (b / "config.json").write_text('{"other": 1}')  # not a weight file
    (a / "config.json").write_text('{"more": 2}')
    file_hash = xxhash.xxh3_128(bytes(range(256)) * 4).hexdigest()
    expected = xxhash.xxh3_128(f"model.safetensors\0{1024}\0{file_hash}\n".encode()).hexdigest()
    assert weights_digest(a) == f"xxh3_128:{expected}"


def test_weights_digest_of_a_gguf_file_and_of_nothing(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    assert weights_digest(gguf).startswith("xxh3_128:")
    assert weights_digest(tmp_path / "missing") == "absent"


def test_a_refused_resume_names_each_change_old_to_new_and_the_way_out() -> None:
    old = {"optim.lr": 1e-6, "algorithm.policy_loss": "ppo", WEIGHTS_KEY: "xxh3_128:" + "a" * 32}
    new = {"optim.lr": 5e-5, "algorithm.policy_loss": "dapo", WEIGHTS_KEY: "xxh3_128:" + "b" * 32}
    with pytest.raises(ResumeIdentityError) as info:
        check_resume(Path("runs/x"), old, new, stated=["optim.lr"])
    message = str(info.value)
    assert 'algorithm.policy_loss: "ppo" -> "dapo"' in message
    assert (
        f'{WEIGHTS_KEY}: "xxh3_128:aaaaaaaaaaaaaaaa..." -> "xxh3_128:bbbbbbbbbbbbbbbb..."'
        in message
    )
    assert "optim.lr" not in message.split("\n")[1:3]  # stated, so not refused
    assert "--resume-changing algorithm.policy_loss model.weights" in message
    assert "--overwrite" in message
    assert check_resume(Path("runs/x"), old, new, stated=[*new]) == {
        key: (old[key], new[key]) for key in sorted(new)
    }


def test_keys_recorded_by_only_one_side_are_not_compared() -> None:
    assert changes({"a": 1, "old_key": 2}, {"a": 1, "model.weights": "x"}) == {}


def test_a_stated_key_that_is_not_compared_is_a_clear_error() -> None:
    current = {**_rl(), WEIGHTS_KEY: "xxh3_128:0"}
    check_stated_keys(["optim.lr", "model.weights"], current, RL_IDENTITY)
    for typo in ("optim.lrr", "train.total_steps"):  # unknown, or known but not compared
        with pytest.raises(ResumeIdentityError, match=f"{typo} is not compared on resume"):
            check_stated_keys([typo], current, RL_IDENTITY)


def test_a_run_recorded_before_the_loss_temperature_key_resumes_with_the_loss_it_ran_with() -> None:
    """Runs recorded before ``algorithm.logprob_temperature`` existed trained at temperature
    1: resuming one that samples at 0.6 under the sampling-temperature default is a change;
    at rollout temperature 1 (or with the key set to 1.0) the loss is the same."""
    key = "algorithm.logprob_temperature"
    old_at_06 = {k: v for k, v in _rl("rollout.temperature=0.6").items() if k != key}
    assert changes(old_at_06, _rl("rollout.temperature=0.6")) == {key: (1.0, "sampling")}
    assert changes(old_at_06, _rl("rollout.temperature=0.6", f"{key}=1.0")) == {}
    old_at_1 = {k: v for k, v in _rl().items() if k != key}
    assert changes(old_at_1, _rl()) == {}
    # recorded with the key: "sampling" equals the number it resolves to, and nothing else
    assert (
        changes(_rl("rollout.temperature=0.6"), _rl("rollout.temperature=0.6", f"{key}=0.6")) == {}
    )
    assert changes(
        _rl("rollout.temperature=0.6"), _rl("rollout.temperature=0.6", f"{key}=1.0")
    ) == {key: ("sampling", 1.0)}


def test_switching_to_async_rollouts_is_a_change_of_the_run() -> None:
    """EDGE_CASES RD22: a sync run resumed with rollout.mode=async rollout.max_staleness=2
    trained off-policy with `changed: {}` recorded."""
    found = changes(_rl(), _rl("rollout.mode=async", "rollout.max_staleness=2"))
    assert found["rollout.mode"] == ("sync", "async")
    assert found["rollout.max_staleness"][1] == 2


def test_switching_to_multi_turn_episodes_is_a_change_of_the_run() -> None:
    """EDGE_CASES RD23: a single-turn run resumed as a multi-turn agent was accepted."""
    old = _rl()
    new = _rl("rollout.environment=tools", "rollout.max_turns=3")
    found = changes(old, new)
    assert found["rollout.max_turns"] == (1, 3)
    assert found["rollout.environment"][0] is None
    assert found["rollout.environment"][1]["type"] == "tools"
    assert list(changes(new, _rl("rollout.environment=tools", "rollout.max_turns=3"))) == []
    assert "rollout.agent.max_response_tokens" in changes(
        old, _rl("rollout.agent.max_response_tokens=64")
    )
    assert changes(old, _rl("rollout.agent.straggler_wait_s=1")) == {}  # scheduling only
