"""Budgets checked against the model and the machine before anything is allocated
(EDGE_CASES C34, C34b, CH11): the token budget against the model's positions (config
time, before the model loads), the preallocated KV cache against free memory, and a chat
message against the context (a 3 MB line refused at once, not a hang)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import torch

from lightrft.adapters.hf import load_causal_lm, load_tokenizer
from lightrft.adapters.hf.chat import ChatInputTooLong, HfChat
from lightrft.adapters.hf.preallocated_cache import CacheBudgetError, cache_bytes, check_cache_fits
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.config.context_budget import check_context_budget, model_positions
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.jobs.chat import ChatOptions, chat
from lightrft.entrypoints.roots.training import training_root

CPU = torch.device("cpu")
POSITIONS = 128  # the tiny model's max_position_embeddings


def test_the_tiny_models_positions_are_read_from_its_config(tiny_dir: Path, tmp_path: Path) -> None:
    assert model_positions(tiny_dir) == POSITIONS
    assert model_positions(tmp_path) is None  # nothing to read: not checked


def test_a_budget_beyond_the_models_positions_is_refused_before_the_model_loads(
    tiny_dir: Path,
) -> None:
    """C34: rollout.max_new_tokens=100000000 was accepted; the engine preallocated a cache
    for it (23.9 GB, then the OOM killer)."""
    config = load_config(None, [f"model.path={tiny_dir}", "rollout.max_new_tokens=100000000"])
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=r"rollout.max_new_tokens \(100000000\) leaves no room"):
        training_root(config)
    assert time.perf_counter() - started < 5  # refused at once, nothing built


def test_a_stated_prompt_length_plus_the_budget_must_fit(tiny_dir: Path) -> None:
    over = load_config(None, ["data.train.max_prompt_length=100", "rollout.max_new_tokens=29"])
    with pytest.raises(ConfigError) as info:
        check_context_budget(over, tiny_dir)
    message = str(info.value)
    assert "data.train.max_prompt_length (100) = 129 positions" in message
    assert "the model has 128" in message and "model.max_positions=N" in message
    fits = load_config(None, ["data.train.max_prompt_length=100", "rollout.max_new_tokens=28"])
    check_context_budget(fits, tiny_dir)
    # the default prompt cap (512) is a cap, not a length: not refused on a small model
    check_context_budget(load_config(None, ["rollout.max_new_tokens=8"]), tiny_dir)
    # the opt-out: a context stated on purpose
    beyond = load_config(None, ["rollout.max_new_tokens=4000", "model.max_positions=8192"])
    check_context_budget(beyond, tiny_dir)


def test_a_kv_cache_larger_than_free_memory_is_refused_naming_the_key(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C34b: without the config check (model.max_positions raised), a huge budget reached
    the engine's preallocation."""
    model = load_causal_lm(tiny_dir, CPU)
    # 2 (k, v) x layers x rows x kv heads x positions x head dim x 4 bytes (fp32)
    text = model.config
    expected = (
        2
        * text.num_hidden_layers
        * 3
        * text.num_key_value_heads
        * 110
        * (text.hidden_size // text.num_attention_heads)
        * 4
    )
    assert cache_bytes(model.config, 3, 110, torch.float32) == expected
    check_cache_fits(model.config, 3, 10, 100, torch.float32, CPU)  # a small one fits
    import lightrft.adapters.hf.preallocated_cache as cache

    monkeypatch.setattr(cache, "free_memory", lambda _device: 2**30)
    with pytest.raises(CacheBudgetError, match=r"rollout.max_new_tokens.*1.0 GiB free"):
        check_cache_fits(model.config, 64, 16, 100_000_000, torch.float32, CPU)


def _session(tiny_dir: Path, max_new_tokens: int = 4) -> HfChat:
    sampling = SamplingParams(n=1, temperature=0.0, max_new_tokens=max_new_tokens)
    return HfChat(load_causal_lm(tiny_dir, CPU), load_tokenizer(tiny_dir), CPU, sampling)


def test_a_3mb_chat_line_is_refused_at_once(tiny_dir: Path) -> None:
    """CH11: a 3 MB line piped to chat hung (no output for 60 s)."""
    out = io.StringIO()
    lines = io.StringIO("a" * 3_000_000 + "\nhello\n")
    started = time.perf_counter()
    assert chat(ChatOptions(tiny_dir, max_new_tokens=4, temperature=0.0), lines, out) == 0
    assert time.perf_counter() - started < 30
    shown = out.getvalue().splitlines()
    assert shown[1].startswith("lightrft: refused: a message of 3000000 characters")
    assert shown[2].startswith("model>")  # the conversation goes on


def test_a_message_over_the_context_in_tokens_leaves_the_conversation_unchanged(
    tiny_dir: Path,
) -> None:
    session = _session(tiny_dir)
    session.reply("hi")
    before = list(session.messages)
    with pytest.raises(ChatInputTooLong, match=r"tokens and the model has 128 positions"):
        session.reply("a " * 150)  # within the character bound, over the context in tokens
    assert session.messages == before


def test_a_recorded_config_with_the_default_prompt_cap_still_runs(
    tiny_dir: Path, tmp_path: Path
) -> None:
    """A run's recorded config.yaml holds every key, the default 512 prompt cap included: it
    is still a cap (resuming a tiny-model run from its recorded config was refused)."""
    from lightrft.entrypoints.config.loading import dump_config

    recorded = tmp_path / "config.yaml"
    recorded.write_text(dump_config(load_config(None, ["rollout.max_new_tokens=4"])))
    check_context_budget(load_config(recorded, []), tiny_dir)
