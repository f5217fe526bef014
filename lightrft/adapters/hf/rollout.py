"""``HfRolloutEngine``: the ``RolloutEngine`` port as a KV-cached sampling loop over an HF model.

Shape letters: N rows being generated (prompts x n), P prompt tokens (left-padded), V vocab.

The engine owns its own model instance (load it separately from the policy, e.g. with
:func:`~lightrft.adapters.hf.loading.load_causal_lm`), so it can sleep, wake and take new
weights independently of the trained module. Decoding is our own loop over
``model(..., past_key_values=cache)`` so that the reported log-probs are exactly those of
the distribution each token was drawn from (see :mod:`lightrft.adapters.hf.sampling`),
including the FIRE first token (``SamplingParams.first_token_temperature``,
arXiv:2410.21236), whose log-prob is reported at its own temperature.

Completions: ``token_ids`` run up to and including the EOS / stop token (nothing after it);
``text`` decodes them with special tokens skipped (a stop string stays in the text);
``finish_reason`` is ``"stop"`` (EOS, a stop token id or a stop string) or ``"length"``.
Given ``SamplingParams.seed`` the output is deterministic for the same prompts, weights and
``max_batch_size``.

Sleep modes: ``"offload"`` moves the weights to host memory and back (outputs unchanged
after wake-up); ``"discard"`` frees them entirely (nothing kept anywhere except the small
buffers), and after ``wake_up`` the engine refuses to generate until ``load_weights`` has
provided every parameter again (the colocated cycle syncs the policy's weights anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor
from transformers import DynamicCache, PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.sampling import (
    StopStringMatcher,
    TokenDistribution,
    draw,
    row_seed,
    sampling_logprobs,
)
from lightrft.adapters.hf.weights import ModelWeights, frozen_on
from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams

SleepMode = Literal["offload", "discard"]


class HfRolloutEngine:
    """Batched sampling with a KV cache on a private copy of a causal LM.

    Args:
        model: the engine's own model instance (not the policy's module).
        tokenizer: decodes completions and defines EOS and padding.
        device: where the model runs while awake.
        sleep_mode: ``"offload"`` (weights kept in host memory) or ``"discard"`` (weights
            dropped; ``load_weights`` is required after ``wake_up``).
        max_batch_size: rows decoded together (``None``: all prompts x n at once).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        device: torch.device,
        *,
        sleep_mode: SleepMode = "offload",
        max_batch_size: int | None = None,
    ) -> None:
        if sleep_mode not in ("offload", "discard"):
            raise ValueError(f"sleep_mode must be 'offload' or 'discard', got {sleep_mode!r}")
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        frozen_on(model, device)
        self._model = model
        self._weights = ModelWeights(self._model, device)
        self._tokenizer = tokenizer
        self._device = device
        self._sleep_mode = sleep_mode
        self._max_batch_size = max_batch_size
        self._awake = True
        self.sleeps = 0
        self.weight_loads = 0

    @property
    def is_awake(self) -> bool:
        """Whether ``generate`` may be called."""
        return self._awake

    @property
    def module(self) -> PreTrainedModel:
        """The engine's model."""
        return self._model

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt; prompt i owns rows [i*n, (i+1)*n)."""
        if not self._awake:
            raise RuntimeError("the rollout engine is asleep; call wake_up() first")
        if not prompts:
            return []
        missing = self._weights.missing
        if missing:
            raise RuntimeError(
                f"the engine's weights were discarded by sleep(); load_weights() must provide "
                f"them again ({len(missing)} missing, e.g. {sorted(missing)[:3]})"
            )
        rows = [p.prompt_token_ids for p in prompts for _ in range(sampling.n)]
        owners = [i for i in range(len(prompts)) for _ in range(sampling.n)]
        generators: list[torch.Generator] | None = None
        if sampling.seed is not None:  # one stream per completion: batching-independent
            generators = [
                torch.Generator(device=self._device).manual_seed(
                    row_seed(sampling.seed, prompts[owner].uid, j % sampling.n)
                )
                for j, owner in enumerate(owners)
            ]
        size = self._max_batch_size or max(len(rows), 1)
        results: list[tuple[list[int], list[float], FinishReason]] = []
        with torch.no_grad():
            for start in range(0, len(rows), size):
                chunk = None if generators is None else generators[start : start + size]
                results.extend(self._decode(rows[start : start + size], sampling, chunk))
        texts = self._tokenizer.batch_decode(
            [ids for ids, _, _ in results], skip_special_tokens=True
        )
        return [
            Completion(owner, tuple(ids), text, reason, tuple(lps))
            for owner, (ids, lps, reason), text in zip(owners, results, texts, strict=True)
        ]

    def load_weights(self, weights: NamedTensors) -> None:
        """Copies ``weights`` (base-model names, e.g. ``HfPolicy.weights_for_sync``) in place."""
        self._weights.load(weights)
        self.weight_loads += 1

    def sleep(self) -> None:
        """Frees device memory: weights to host memory or dropped (see ``sleep_mode``)."""
        if not self._awake:
            return
        if self._sleep_mode == "offload":
            self._weights.offload()
        else:
            self._weights.discard()
        self._awake = False
        self.sleeps += 1

    def wake_up(self) -> None:
        """Brings the weights back (``offload``) or reallocates them empty (``discard``)."""
        if self._awake:
            return
        self._weights.restore()
        self._awake = True

    def _decode(
        self,
        rows: Sequence[Sequence[int]],
        sampling: SamplingParams,
        generator: Sequence[torch.Generator] | None,
    ) -> list[tuple[list[int], list[float], FinishReason]]:
        """Samples continuations of ``rows`` until each stops or reaches the budget."""
        input_ids, mask = self._left_pad(rows)  # [N, P] each
        positions = position_ids_from_mask(mask)
        cache = DynamicCache(config=self._model.config)
        logits = self._step(input_ids, mask, positions, cache)  # [N, V]
        next_position = positions[:, -1:] + 1  # [N, 1]
        stop_ids = torch.tensor(self._stop_token_ids(sampling), device=self._device)
        matcher = StopStringMatcher(self._tokenizer, sampling.stop_strings)
        tokens: list[list[int]] = [[] for _ in rows]
        logprobs: list[list[float]] = [[] for _ in rows]
        stopped = [False] * len(rows)
        for step in range(sampling.max_new_tokens):
            dist = _distribution(sampling, first=step == 0)
            step_logprobs = sampling_logprobs(logits, dist)  # [N, V]
            token = draw(step_logprobs, dist.temperature == 0, generator)  # [N]
            chosen = step_logprobs.gather(-1, token[:, None]).squeeze(-1)  # [N]
            is_stop = torch.isin(token, stop_ids).tolist()
            for i, (tok, lp) in enumerate(zip(token.tolist(), chosen.tolist(), strict=True)):
                if stopped[i]:
                    continue
                tokens[i].append(tok)
                logprobs[i].append(lp)
                stopped[i] = is_stop[i] or (bool(matcher) and matcher.hit(tokens[i]))
            if all(stopped) or step + 1 == sampling.max_new_tokens:
                break
            mask = torch.cat([mask, mask.new_ones(len(rows), 1)], dim=1)
            logits = self._step(token[:, None], mask, next_position, cache)
            next_position = next_position + 1
        reasons: list[FinishReason] = ["stop" if s else "length" for s in stopped]
        return list(zip(tokens, logprobs, reasons, strict=True))

    def _step(
        self, input_ids: Tensor, mask: Tensor, positions: Tensor, cache: DynamicCache
    ) -> Tensor:
        """Logits (N, V) of the next token after feeding ``input_ids`` (N, S)."""
        out = self._model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits: Tensor = out.logits[:, -1]
        return logits

    def _left_pad(self, rows: Sequence[Sequence[int]]) -> tuple[Tensor, Tensor]:
        """Left-padded ids and attention mask, both (N, P)."""
        width = max(len(r) for r in rows)
        pad = self._tokenizer.pad_token_id
        pad = 0 if pad is None else pad
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row) :] = 1
        return ids.to(self._device), mask.to(self._device)

    def _stop_token_ids(self, sampling: SamplingParams) -> list[int]:
        """EOS ids of the tokenizer and generation config, plus ``sampling.stop_token_ids``."""
        ids = set(sampling.stop_token_ids)
        if self._tokenizer.eos_token_id is not None:
            ids.add(int(self._tokenizer.eos_token_id))
        config_eos = getattr(getattr(self._model, "generation_config", None), "eos_token_id", None)
        if isinstance(config_eos, int):
            ids.add(config_eos)
        elif config_eos is not None:
            ids.update(int(i) for i in config_eos)
        return sorted(ids) or [-1]


def _distribution(sampling: SamplingParams, *, first: bool) -> TokenDistribution:
    """The step's distribution; FIRE replaces the temperature of the first token."""
    temperature = sampling.temperature
    if first and sampling.first_token_temperature is not None:
        temperature = sampling.first_token_temperature
    return TokenDistribution(temperature, sampling.top_k, sampling.top_p, sampling.min_p)
