"""What the vLLM and SGLang translations share: one request per completion, and the
sampling options both engines name alike (no engine import here).

Prompt i's sample j is request ``i * n + j`` with ``n=1`` and, when ``SamplingParams.seed``
is set, its own seed ``row_seed(seed, uid, j)``, so a completion does not depend on the
batch it was drawn in (the HF engine uses the same seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lightrft.adapters.model_parts.seeds import row_seed
from lightrft.domain.types import PromptRecord, SamplingParams


def completion_requests(
    prompts: Sequence[PromptRecord], sampling: SamplingParams
) -> list[tuple[int, int | None]]:
    """(prompt index, seed or None) of every completion; prompt i owns [i*n, (i+1)*n)."""
    return [
        (i, None if sampling.seed is None else row_seed(sampling.seed, prompt.uid, j))
        for i, prompt in enumerate(prompts)
        for j in range(sampling.n)
    ]


def shared_sampling_options(sampling: SamplingParams, engine: str) -> dict[str, Any]:
    """The options vLLM and SGLang spell the same way, for one completion of ``sampling``.

    Refuses ``first_token_temperature`` (FIRE sampling: only the HF engine has it), naming
    ``engine``. ``top_k`` 0 (off) becomes the engines' -1; no stop strings or ids: None.
    """
    if sampling.first_token_temperature is not None:
        raise ValueError(
            f"rollout.engine={engine} does not support first_token_temperature (FIRE "
            "sampling); use rollout.engine=hf or unset first_token_temperature"
        )
    return {
        "n": 1,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k if sampling.top_k > 0 else -1,
        "min_p": sampling.min_p,
        "stop": list(sampling.stop_strings) or None,
        "stop_token_ids": list(sampling.stop_token_ids) or None,
        "ignore_eos": sampling.ignore_eos,
        "skip_special_tokens": True,
    }
