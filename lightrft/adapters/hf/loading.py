"""Loading a causal language model and its tokenizer with Hugging Face ``transformers``.

Nothing here reaches the network: every load runs with ``local_files_only=True``. A model
source is one of

- a local directory written by ``save_pretrained`` (``config.json`` + safetensors),
- a hub-cache directory (``.../models--org--name``; the snapshot ``refs/main`` points to,
  else the newest one) or a repo id (``"org/name"``) already in the local hub cache,
- a GGUF file (``.../model.gguf``), dequantized to dense weights on load.

After a GGUF load ``transformers`` leaves ``model.hf_quantizer`` attached although the
weights are dense, and then refuses ``save_pretrained`` and training;
:func:`load_causal_lm` detaches it (``hf_quantizer.remove_quantization_config``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.attention_choice import AttnImplementation, check_attn_implementation
from lightrft.adapters.hf.causal_lm_head import check_causal_lm_head
from lightrft.adapters.hf.model_files import (
    ModelFilesError,
    check_model_config,
    check_model_directory,
    check_tokenizer_directory,
)

DTypeName = Literal["float32", "bfloat16", "float16"]

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


@dataclass(frozen=True)
class ModelLoadParams:
    """How to load a model: weight dtype, attention kernel, activation checkpointing.

    ``attn_implementation="flash_attention_2"`` needs the ``flash_attn`` package and a CUDA
    device; ``trust_remote_code`` runs Python code shipped with the checkpoint, so it is off
    unless asked for.
    """

    dtype: DTypeName = "float32"
    attn_implementation: AttnImplementation = "sdpa"
    gradient_checkpointing: bool = False
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        if self.attn_implementation not in ("sdpa", "eager", "flash_attention_2"):
            raise ValueError(
                "attn_implementation must be 'sdpa', 'eager' or 'flash_attention_2', got "
                f"{self.attn_implementation!r}"
            )


@dataclass(frozen=True)
class ModelSource:
    """Where ``from_pretrained`` looks: a directory or repo id, plus a GGUF file name in it."""

    name_or_path: str
    gguf_file: str | None = None


def resolve_source(source: str | Path) -> ModelSource:
    """Turns a user path (directory, hub-cache directory, GGUF file or repo id) into a source.

    Raises ``FileNotFoundError`` for a path that looks local but does not exist.
    """
    path = Path(source).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise FileNotFoundError(f"GGUF file {path} does not exist")
        return ModelSource(str(path.parent), gguf_file=path.name)
    if path.is_dir():
        if not os.access(path, os.R_OK | os.X_OK):
            raise ModelFilesError(
                f"model directory {path} cannot be read (permission denied): make it readable "
                f"(chmod -R u+rX {path}) or run as a user who may read it"
            )
        if (path / "snapshots").is_dir():
            return ModelSource(str(_hub_cache_snapshot(path)))
        return ModelSource(str(path))
    if path.is_file():
        raise ModelFilesError(
            f"model path {path} is a file; expected a model directory (config.json, "
            "*.safetensors weights, tokenizer files) or a .gguf file"
        )
    if path.is_absolute() or str(source).startswith((".", "~")) or path.exists():
        raise FileNotFoundError(f"model directory {path} does not exist")
    return ModelSource(str(source))  # a repo id, looked up in the local hub cache


def _hub_cache_snapshot(repo_dir: Path) -> Path:
    """The snapshot of a hub-cache repo dir: the one ``refs/main`` names, else the newest."""
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        snapshot = repo_dir / "snapshots" / ref.read_text().strip()
        if snapshot.is_dir():
            return snapshot
    snapshots = sorted((repo_dir / "snapshots").iterdir(), key=lambda p: p.stat().st_mtime)
    if not snapshots:
        raise FileNotFoundError(f"hub-cache directory {repo_dir} has no snapshot")
    return snapshots[-1]


def load_tokenizer(
    source: str | Path, *, trust_remote_code: bool = False
) -> PreTrainedTokenizerBase:
    """The tokenizer of ``source``, left-padding, with a pad token (EOS if it had none)."""
    src = resolve_source(source)
    if src.gguf_file is None and Path(src.name_or_path).is_dir():
        check_model_config(Path(src.name_or_path) / "config.json")
        check_tokenizer_directory(Path(src.name_or_path))
    tokenizer = AutoTokenizer.from_pretrained(
        src.name_or_path,
        gguf_file=src.gguf_file,
        local_files_only=True,
        trust_remote_code=trust_remote_code,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_causal_lm(
    source: str | Path,
    device: torch.device,
    params: ModelLoadParams | None = None,
) -> PreTrainedModel:
    """Loads a causal LM from ``source`` onto ``device`` (see the module docstring).

    GGUF checkpoints are dequantized and their quantizer detached, so the model trains and
    saves like any other. With ``gradient_checkpointing`` the KV cache is turned off.
    """
    params = params or ModelLoadParams()
    check_attn_implementation(params.attn_implementation, device)
    src = resolve_source(source)
    kwargs: dict[str, Any] = {
        "dtype": DTYPES[params.dtype],
        "attn_implementation": params.attn_implementation,
        "local_files_only": True,
        "trust_remote_code": params.trust_remote_code,
    }
    if src.gguf_file is not None:
        kwargs["gguf_file"] = src.gguf_file
    else:
        kwargs["use_safetensors"] = True  # never unpickle weights
        if Path(src.name_or_path).is_dir():
            check_model_directory(Path(src.name_or_path))
            check_causal_lm_head(Path(src.name_or_path))
    model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(src.name_or_path, **kwargs)
    detach_gguf_quantizer(model)
    if params.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    cast(Any, model).to(device)  # transformers' decorator hides the signature from mypy
    return model


def detach_gguf_quantizer(model: PreTrainedModel) -> None:
    """Drops the GGUF quantizer ``transformers`` keeps on dequantized (dense) weights."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return
    method = getattr(getattr(quantizer, "quantization_config", None), "quant_method", None)
    if str(getattr(method, "value", method)).lower() != "gguf":
        return  # a real quantization (bitsandbytes, ...): leave it alone
    quantizer.remove_quantization_config(model)


def enable_gradient_checkpointing(model: PreTrainedModel) -> None:
    """Non-reentrant activation checkpointing (works with frozen inputs, e.g. under LoRA)."""
    kwargs = {"use_reentrant": False}
    hf_model: Any = model
    if hasattr(hf_model, "activation_checkpointing_enable"):  # the transformers >= 5 name
        hf_model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        hf_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.config.use_cache = False
