"""Loading a scalar reward model: an HF sequence-classification directory (a LightRFT export
or any ``*ForSequenceClassification`` checkpoint with one label), or a causal LM directory
whose backbone gets a fresh one-output head (the start of reward-model training).

Offline only (``local_files_only=True``); ``trust_remote_code`` stays off unless asked for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, PreTrainedModel

from lightrft.adapters.model_parts.seeds import seeded_init
from lightrft.adapters.reward_models.card import RewardModelCard

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def load_reward_tokenizer(path: str | Path, *, trust_remote_code: bool = False) -> Any:
    """The tokenizer of ``path`` with a pad token (EOS when it had none)."""
    tokenizer = AutoTokenizer.from_pretrained(
        str(path), local_files_only=True, trust_remote_code=trust_remote_code
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_reward_classifier(
    path: str | Path,
    device: torch.device,
    *,
    dtype: str = "float32",
    tokenizer: Any | None = None,
    trust_remote_code: bool = False,
    attn_implementation: str = "sdpa",
    init_seed: int = 0,
) -> PreTrainedModel:
    """A one-output sequence classifier from ``path`` on ``device``.

    A causal LM checkpoint gives its backbone and a freshly initialized head, drawn from
    ``init_seed`` (pass the run's seed) without touching torch's global random stream.
    ``tokenizer``'s pad token pads the batches when the checkpoint's config names none.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"reward model directory {directory} does not exist")
    with seeded_init(init_seed, "reward_model.score_head"):  # loaded on the host
        model: PreTrainedModel = AutoModelForSequenceClassification.from_pretrained(
            str(directory),
            num_labels=1,
            dtype=DTYPES[dtype],
            attn_implementation=attn_implementation,
            local_files_only=True,
            trust_remote_code=trust_remote_code,
        )
    pad_token_id = None if tokenizer is None else tokenizer.pad_token_id
    if model.config.pad_token_id is None and pad_token_id is not None:
        model.config.pad_token_id = pad_token_id
    cast(Any, model).to(device)
    return model


def load_card(path: str | Path) -> RewardModelCard:
    """The directory's ``lightrft_reward.json``, or the defaults when it has none."""
    return RewardModelCard.load(path) or RewardModelCard()


CHECKPOINT_MODALITIES = {
    "qwen2_vl": "vision-language",
    "qwen2_5_vl": "vision-language",
    "internvl": "vision-language",
    "qwen2_audio": "audio-language",
}
"""``config.json`` model types whose reward models read media, and their modality."""


def checkpoint_modality(path: str | Path) -> str:
    """The modality of the backbone in ``path`` from its ``config.json`` (``text`` for any
    other model type, or when the file is absent)."""
    config = Path(path).expanduser() / "config.json"
    if not config.is_file():
        return "text"
    model_type = json.loads(config.read_text()).get("model_type")
    return CHECKPOINT_MODALITIES.get(str(model_type), "text")
