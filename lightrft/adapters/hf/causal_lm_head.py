"""Refusing a model directory whose model has no causal-LM head.

``AutoModelForCausalLM`` loads an encoder checkpoint (a BERT directory: ``BertForMaskedLM``
or ``BertModel``) as ``BertLMHeadModel`` with a freshly initialised head, and training then
"works" on noise. The directory's ``config.json`` says what the checkpoint is: its
``architectures`` must include a causal-LM class (one that ``AutoModelForCausalLM`` maps
to, or a ``*ForCausalLM`` / ``*LMHeadModel`` name), or, without ``architectures``, its
``model_type`` must be one ``AutoModelForCausalLM`` knows.
"""

from __future__ import annotations

import json
from pathlib import Path

from lightrft.adapters.hf.model_files import ModelFilesError

CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def causal_lm_classes() -> frozenset[str]:
    """Class names ``AutoModelForCausalLM`` builds, from transformers' own mapping."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return frozenset(str(name) for name in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())


def check_causal_lm_head(directory: Path) -> None:
    """Raises :class:`ModelFilesError` naming ``directory`` and its architecture when its
    ``config.json`` describes a model without a causal-LM head. A missing or unreadable
    ``config.json`` is left to ``from_pretrained`` to report."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(config, dict):
        return
    architectures = [str(a) for a in config.get("architectures") or []]
    auto_map = config.get("auto_map")
    if isinstance(auto_map, dict) and "AutoModelForCausalLM" in auto_map:
        return
    known = causal_lm_classes()
    if architectures:
        if any(a in known or a.endswith(CAUSAL_SUFFIXES) for a in architectures):
            return
        what = f"architectures {', '.join(architectures)}"
    else:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        model_type = config.get("model_type")
        if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            return
        what = f"model_type {model_type!r}"
    raise ModelFilesError(
        f"{directory} holds a model without a causal-LM head ({what} in config.json); "
        "expected a decoder language model that AutoModelForCausalLM loads (e.g. "
        "LlamaForCausalLM, Qwen2ForCausalLM): an encoder such as BERT would train with a "
        "freshly initialised head"
    )
