"""``HfRolloutEngine``: the ``RolloutEngine`` port as a KV-cached sampling loop over an HF model.

Shape letters: N rows being generated (prompts x n), P prompt tokens (left-padded), V vocab.

By default the engine owns its own model instance (load it separately from the policy, e.g.
with :func:`~lightrft.adapters.hf.loading.load_causal_lm`), so it can sleep, wake and take
new weights independently of the trained module. With ``shares_policy_weights=True`` it
runs the policy's own module instead (one device, no LoRA): no second copy of the weights
and nothing to copy at a weight sync; see :class:`HfRolloutEngine`. Decoding is our own loop
over
``model(..., past_key_values=cache)`` so that the reported log-probs are exactly those of
the distribution each token was drawn from (see :func:`lightrft.domain.sampling.next_tokens`),
including the FIRE first token (``SamplingParams.first_token_temperature``,
arXiv:2410.21236), whose log-prob is reported at its own temperature.

Completions: ``token_ids`` run up to and including the EOS / stop token (nothing after it);
``text`` decodes them with special tokens skipped (a stop string stays in the text);
``finish_reason`` is ``"stop"`` (EOS, a stop token id or a stop string) or ``"length"``.
Given ``SamplingParams.seed`` the output is deterministic for the same prompts, weights and
``max_batch_size``.

Work saved per batch: the prompt prefill runs once per distinct prompt of a chunk (the n
samples of a prompt then copy its KV cache and first-token logits), and rows that have
stopped leave the batch (their KV cache is dropped) once they are a quarter of it.

Sleep modes: ``"offload"`` moves the weights to host memory and back (outputs unchanged
after wake-up); ``"discard"`` frees them entirely (nothing kept anywhere except the small
buffers), and after ``wake_up`` the engine refuses to generate until ``load_weights`` has
provided every parameter again (the colocated cycle syncs the policy's weights anyway).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, Literal

import structlog
import torch
from torch import Tensor
from transformers import DynamicCache, PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.engine_parts.rollout_engine_base import GuardedGenerate
from lightrft.adapters.hf.episode_cache import (
    EpisodeKvStore,
    HeldCache,
    LayerKv,
    fill_left_padded,
    row_cache,
    row_layers,
    suffix_positions,
)
from lightrft.adapters.hf.fused_decode import (
    FusedDecodeMode,
    FusedDecoder,
    fused_decode_supported,
)
from lightrft.adapters.hf.gqa_attention import gqa_decode_attention
from lightrft.adapters.hf.logprobs import position_ids_from_mask, suppress_tokens
from lightrft.adapters.hf.multimodal_inputs import MultimodalInputs
from lightrft.adapters.hf.packed_linear import PackedLinears, packing_available
from lightrft.adapters.hf.preallocated_cache import (
    PreallocatedLayer,
    check_cache_fits,
    preallocated_cache,
)
from lightrft.adapters.hf.quantized_rollout import QuantizedTargets
from lightrft.adapters.hf.stop_strings import StopStringMatcher
from lightrft.adapters.hf.weights import ModelWeights, frozen_on
from lightrft.adapters.model_parts.seeds import row_seed
from lightrft.domain.modality import Payload
from lightrft.domain.ports import NamedTensors
from lightrft.domain.sampling import next_tokens
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams
from lightrft.domain.weight_checksum import weights_checksum

SleepMode = Literal["offload", "discard"]

log = structlog.get_logger(__name__)


class HfRolloutEngine(GuardedGenerate):
    """Batched sampling with a KV cache on a causal LM.

    Args:
        model: the engine's own model instance, or the policy's module when
            ``shares_policy_weights``.
        tokenizer: decodes completions and defines EOS and padding.
        device: where the model runs while awake.
        sleep_mode: ``"offload"`` (weights kept in host memory) or ``"discard"`` (weights
            dropped; ``load_weights`` is required after ``wake_up``).
        max_batch_size: rows decoded together (``None``: all prompts x n at once).
        shares_policy_weights: ``model`` is the trained policy's module (same device, no
            LoRA wrapper). The engine then leaves its parameters, gradients and device
            alone: ``sleep``/``wake_up`` only gate ``generate`` (the weights are the
            policy's, and the KV cache is freed after every call); ``load_weights`` only
            checks that each tensor is the engine's own parameter (what the policy's
            ``weights_for_sync`` yields without LoRA) and refuses anything else, since
            copying it would overwrite the policy. Generation runs the module in eval
            mode under ``no_grad`` and restores its train/eval mode afterwards.
        compile_decode: run the one-token decode steps through
            ``torch.compile(model, dynamic=True)`` (built at the first decode; the prefill
            stays eager). Fuses the small per-layer ops and removes most of the Python
            overhead of a step; the compilation costs minutes on a small CPU, so it pays
            off on long runs only. Samples are the same up to float rounding.
        multimodal: the model family's input builder for prompts with images / audio
            (:mod:`~lightrft.adapters.hf.multimodal_inputs`): the prefill then gets the
            media and the family's positions (M-RoPE), and the decode steps continue each
            row's text positions after its media. Prompts with the same ids but other
            media are prefilled separately. The family's media placeholder tokens are
            never sampled (their logits are suppressed, as in the policy).
        quantized: the int8 layers of ``model`` (:func:`~lightrft.adapters.hf.quantized_rollout.
            quantize_linears`, applied by the caller to the engine's own model): synced float
            weights of those layers are re-quantized. The engine then samples from an
            approximation of the policy (measure it with the rollout/* mismatch metrics).
        packed_linears: on CPU, run the decode steps' float32 linear layers on oneDNN-packed
            copies of their weights (:mod:`~lightrft.adapters.hf.packed_linear`; same
            samples up to float rounding, plus the linear weights' size in host memory,
            held between calls by an own model and dropped after each call when sharing
            the policy's). Off by default: the samples differ from MKL's after near-ties,
            so a run's figures change with it. Ignored off CPU, with ``compile_decode`` and
            for non-float32 weights.
        fused_decode: on CPU, run each decode step as LightRFT's own flat sequence of tensor
            ops over the model's weights instead of ``transformers``' modules
            (:mod:`~lightrft.adapters.hf.fused_decode`; Llama, Qwen2 and Mistral layouts,
            float32): packed q|k|v and gate|up matmuls, one-op RMSNorm, no per-step mask
            building. Supersedes ``packed_linears`` for the decode steps (the prefill stays
            ``transformers'``); same samples up to float rounding and the same host memory
            as ``packed_linears``. ``"on"``: when the model or the engine's settings
            (``compile_decode``, multimodal, int8) rule it out, the engine logs a warning
            with the reason (``rollout.fused_decode_unavailable``) and decodes as usual;
            ``"auto"``: the same, logged at info level (``rollout.fused_decode_off``);
            ``"off"``: never. ``rollout.engine.fused_decode`` defaults to auto; this
            constructor to ``"off"``.
        episode_cache_size: keep the KV cache of up to this many multi-turn episodes
            between their turns (:mod:`~lightrft.adapters.hf.episode_cache`, through
            :meth:`generate_turns`); 0: off. Text models with full attention only.

    Decode steps on CPU also read grouped key/value heads in place
    (:mod:`~lightrft.adapters.hf.gqa_attention`) instead of copying the cache per head.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        device: torch.device,
        *,
        sleep_mode: SleepMode = "offload",
        max_batch_size: int | None = None,
        shares_policy_weights: bool = False,
        compile_decode: bool = False,
        multimodal: MultimodalInputs | None = None,
        quantized: QuantizedTargets | None = None,
        packed_linears: bool = False,
        fused_decode: FusedDecodeMode = "off",
        episode_cache_size: int = 0,
    ) -> None:
        if sleep_mode not in ("offload", "discard"):
            raise ValueError(f"sleep_mode must be 'offload' or 'discard', got {sleep_mode!r}")
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if shares_policy_weights and quantized is not None:
            raise ValueError("a quantized engine needs its own model, not the policy's")
        if shares_policy_weights:
            _check_shareable(model, device)
        else:
            frozen_on(model, device)
        self._shared = shares_policy_weights
        self._quantized = quantized
        self._multimodal = multimodal
        self._model = model
        self._compile_decode = compile_decode
        self._compiled: torch.nn.Module | None = None
        self._fused = (
            self._fused_decoder(
                model, device, compile_decode, multimodal, quantized, required=fused_decode == "on"
            )
            if fused_decode != "off"
            else None
        )
        self._packed = (
            PackedLinears(model)
            if packed_linears
            and self._fused is None  # the fused steps pack their own weights
            and not compile_decode
            and packing_available(model, device)
            else None
        )
        self._weights = ModelWeights(self._model, device)
        self._tokenizer = tokenizer
        self._device = device
        self._sleep_mode = sleep_mode
        self._max_batch_size = max_batch_size
        self._awake = True
        self.sleeps = 0
        self.weight_loads = 0
        if episode_cache_size and multimodal is not None:
            raise ValueError(
                "episode_cache_size: keeping episode KV caches needs a text model; this "
                "engine reads media (multimodal), set rollout.engine.episode_cache=0"
            )
        self.episode_caches = EpisodeKvStore(episode_cache_size) if episode_cache_size > 0 else None
        self._handles: Sequence[str | None] | None = None  # of the running generate_turns

    @property
    def weights_version(self) -> int:
        """Changes at every weight load and sleep: a held episode cache of another version
        is never read."""
        return self.weight_loads + self.sleeps

    def generate_turns(
        self,
        prompts: Sequence[PromptRecord],
        sampling: SamplingParams,
        episodes: Sequence[str | None],
    ) -> list[Completion]:
        """``generate`` (``sampling.n`` must be 1) for turns of the multi-turn ``episodes``
        (one handle per prompt; ``None``: not an episode): an episode's held KV cache is
        reused when the prompt continues the ids it holds, and each stopped row's cache is
        held for its episode's next turn (see :mod:`~lightrft.adapters.hf.episode_cache`).
        Without an episode cache this is ``generate``."""
        if len(episodes) != len(prompts):
            raise ValueError(
                f"generate_turns: {len(episodes)} episode handles for {len(prompts)} prompts"
            )
        if self.episode_caches is None:
            return self.generate(prompts, sampling)
        if sampling.n != 1:
            raise ValueError(f"generate_turns samples one turn per episode; got n={sampling.n}")
        self._handles = episodes
        try:
            return self.generate(prompts, sampling)
        finally:
            self._handles = None

    def release_episodes(self, episodes: Sequence[str]) -> None:
        """Drops the held KV caches of ``episodes`` (they ended)."""
        if self.episode_caches is not None:
            self.episode_caches.release(episodes)

    def _drop_episode_caches(self) -> None:
        if self.episode_caches is not None:
            self.episode_caches.clear()

    @property
    def module(self) -> PreTrainedModel:
        """The engine's model."""
        return self._model

    @property
    def shares_policy_weights(self) -> bool:
        """Whether the engine runs the policy's own module (no copy of the weights)."""
        return self._shared

    def _generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        missing = self._weights.missing
        if missing:
            raise RuntimeError(
                f"the engine's weights were discarded by sleep(); load_weights() must provide "
                f"them again ({len(missing)} missing, e.g. {sorted(missing)[:3]})"
            )
        rows = [p.prompt_token_ids for p in prompts for _ in range(sampling.n)]
        payloads = [p.multimodal for p in prompts for _ in range(sampling.n)]
        if any(payloads) and self._multimodal is None:
            raise ValueError(
                "this engine's model reads text only, but prompts "
                f"{[p.uid for p in prompts if p.multimodal][:5]} carry images or audio; build "
                "the engine with the model family's multimodal inputs"
            )
        owners = [i for i in range(len(prompts)) for _ in range(sampling.n)]
        generators: list[torch.Generator] | None = None
        if sampling.seed is not None:  # one stream per completion: batching-independent
            generators = [
                torch.Generator(device=self._device).manual_seed(
                    row_seed(sampling.seed, prompts[owner].uid, j % sampling.n)
                )
                for j, owner in enumerate(owners)
            ]
        handles: list[str | None] = list(self._handles or [None] * len(rows))
        size = self._max_batch_size or max(len(rows), 1)
        results: list[tuple[list[int], list[float], FinishReason]] = []
        was_training = self._model.training
        self._model.train(False)  # a shared policy module may be in train mode
        try:
            with torch.no_grad():
                for start in range(0, len(rows), size):
                    chunk = None if generators is None else generators[start : start + size]
                    part = slice(start, start + size)
                    results.extend(
                        self._decode(rows[part], sampling, chunk, payloads[part], handles[part])
                    )
        finally:
            self._model.train(was_training)
            if self._shared:  # the optimizer changes the weights anyway: drop the copies
                self._release_packed_copies()
        texts = self._tokenizer.batch_decode(
            [ids for ids, _, _ in results], skip_special_tokens=True
        )
        return [
            Completion(owner, tuple(ids), text, reason, tuple(lps))
            for owner, (ids, lps, reason), text in zip(owners, results, texts, strict=True)
        ]

    def load_weights(self, weights: NamedTensors) -> None:
        """Copies ``weights`` (base-model names, e.g. ``HfPolicy.weights_for_sync``) in place.

        When the engine shares the policy's weights, checks instead that every tensor is
        already the engine's own (nothing to copy) and raises ``ValueError`` otherwise.
        """
        if self._shared:
            self._check_aliases(weights)
        elif self._quantized is not None:
            own = frozenset(
                name for name, _ in self._model.named_parameters(remove_duplicate=False)
            )
            own |= frozenset(name for name, _ in self._model.named_buffers())
            self._weights.load(self._quantized.route(weights, own))
        else:
            self._weights.load(weights)
        self.weight_loads += 1
        self._drop_episode_caches()

    @property
    def weights_dtype(self) -> torch.dtype | None:
        """The engine model's dtype: synced tensors are cast to it."""
        return self._weights.dtype

    def weights_checksum(self, names: Sequence[str]) -> str:
        """Checksum of the tensors the engine generates with, under ``names``."""
        if self._quantized is not None:
            raise ValueError(
                "a quantized engine's weights differ from the policy's by design; their "
                "checksums cannot match (turn off the sync checksum or the quantization)"
            )
        return weights_checksum(self._weights.named(names))

    def sleep(self) -> None:
        """Frees device memory: weights to host memory or dropped (see ``sleep_mode``), and
        the packed weight copies of ``packed_linears`` / ``fused_decode`` (host memory the
        trainer can use; the next call after a weight sync repacks anyway)."""
        if not self._awake:
            return
        self._release_packed_copies()
        self._drop_episode_caches()
        if self._shared:  # the weights are the policy's: only generation is gated
            pass
        elif self._sleep_mode == "offload":
            self._weights.offload()
        else:
            self._weights.discard()
        self._awake = False
        self.sleeps += 1

    def _release_packed_copies(self) -> None:
        for packed in (self._packed, self._fused):
            if packed is not None:
                packed.release()

    def wake_up(self) -> None:
        """Brings the weights back (``offload``) or reallocates them empty (``discard``)."""
        if self._awake:
            return
        if not self._shared:
            self._weights.restore()
        self._awake = True

    def _check_aliases(self, weights: NamedTensors) -> None:
        """Every (name, tensor) must be the engine's own tensor of that name."""
        own = dict(self._model.named_parameters(remove_duplicate=False))
        own.update(self._model.named_buffers())
        for name, tensor in weights:
            target = own.get(name)
            if target is None:
                raise KeyError(f"the engine's model has no parameter or buffer {name!r}")
            if target.data_ptr() != tensor.data_ptr() or target.shape != tensor.shape:
                raise ValueError(
                    f"{name}: this engine shares the policy's weights and cannot take other "
                    "tensors (a LoRA merge or another model); build it with "
                    "shares_policy_weights=False to load separate weights"
                )

    def _decode(
        self,
        rows: Sequence[Sequence[int]],
        sampling: SamplingParams,
        generator: Sequence[torch.Generator] | None,
        payloads: Sequence[Payload],
        handles: Sequence[str | None] = (),
    ) -> list[tuple[list[int], list[float], FinishReason]]:
        """Samples continuations of ``rows`` until each stops or reaches the budget.

        The KV cache and the attention mask are allocated once for prompt + budget (text
        models; multimodal prefills keep ``DynamicCache``), the sampled ids and log-probs go
        into (N, budget) tensors, and per-step bookkeeping is a few batched tensor ops:
        nothing is concatenated per step.
        """
        budget = sampling.max_new_tokens
        width = max(len(r) for r in rows)
        if self._multimodal is None:
            dtype = next(self._model.parameters()).dtype
            check_cache_fits(self._model.config, len(rows), width, budget, dtype, self._device)
        cache = (
            preallocated_cache(self._model.config, width + budget)
            if self._multimodal is None
            else DynamicCache(config=self._model.config)
        )
        store = self.episode_caches if any(handles) else None
        if store is not None and all(type(x) is PreallocatedLayer for x in cache.layers):
            logits, prompt_mask, positions = self._prefill_episodes(rows, cache, handles, store)
        else:
            store = None
            logits, prompt_mask, positions = self._prefill(rows, cache, payloads)
        n, width = prompt_mask.shape
        mask = prompt_mask.new_ones(n, width + budget)  # [N, P + budget]; a step uses a prefix
        mask[:, :width] = prompt_mask
        next_position = positions[:, -1:] + 1  # [N, 1]
        stop_ids = torch.tensor(self._stop_token_ids(sampling), device=self._device)
        matcher = StopStringMatcher(self._tokenizer, sampling.stop_strings)
        out_ids = torch.zeros(n, max(budget, 1), dtype=torch.long, device=self._device)
        out_logprobs = torch.zeros(n, max(budget, 1), dtype=torch.float32, device=self._device)
        lengths = torch.zeros(n, dtype=torch.long, device=self._device)  # tokens kept per row
        stopped = torch.zeros(n, dtype=torch.bool, device=self._device)
        active = torch.arange(n, device=self._device)  # row of each batch entry
        gens = None if generator is None else list(generator)
        with self._decode_mode(n):
            for step in range(budget):
                token, token_logprobs = next_tokens(logits, sampling, step, gens)  # [A] each
                live = ~stopped[active]  # [A] rows still generating (finished ones wait to leave)
                out_ids[active, step] = token
                out_logprobs[active, step] = token_logprobs
                lengths[active] += live
                now_stopped = live & torch.isin(token, stop_ids)
                if matcher:
                    for j in live.nonzero().flatten().tolist():
                        i = int(active[j])
                        if matcher.hit(out_ids[i, : step + 1].tolist()):
                            now_stopped[j] = True
                stopped[active] |= now_stopped
                if store is not None and bool(now_stopped.any()):
                    self._hold(
                        store, cache, rows, handles, active, now_stopped, out_ids, width, step
                    )
                done = int(stopped[active].sum())
                if done == len(active) or step + 1 == budget:
                    break
                if 4 * done >= len(active):  # drop finished rows once they are a quarter
                    keep = (~stopped[active]).nonzero().flatten()
                    cache.reorder_cache(keep)
                    mask, next_position, token = mask[keep], next_position[keep], token[keep]
                    active = active[keep]
                    gens = None if gens is None else [gens[j] for j in keep.tolist()]
                logits = self._decode_step(
                    token[:, None], mask[:, : width + step + 1], next_position, cache
                )
                next_position = next_position + 1
        ids, lps, kept = out_ids.tolist(), out_logprobs.tolist(), lengths.tolist()
        reasons: list[FinishReason] = ["stop" if s else "length" for s in stopped.tolist()]
        return [(ids[i][: kept[i]], lps[i][: kept[i]], reasons[i]) for i in range(n)]

    def _prefill(
        self, rows: Sequence[Sequence[int]], cache: DynamicCache, payloads: Sequence[Payload]
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Runs each distinct prompt of ``rows`` once and copies its cache to its samples.

        Returns the next-token logits (N, V), attention mask (N, P) and text position ids
        (N, P) of every row (the last column + 1 is the next token's position); ``cache``
        then holds N rows. A prompt's identity includes its media payload.
        """
        distinct: dict[Any, int] = {}
        firsts: list[int] = []
        owner = []
        for j, (row, payload) in enumerate(zip(rows, payloads, strict=True)):
            key = (tuple(row), id(payload)) if payload else tuple(row)
            if key not in distinct:
                distinct[key] = len(distinct)
                firsts.append(j)
            owner.append(distinct[key])
        input_ids, mask = self._left_pad([rows[j] for j in firsts])  # [U, P] each
        positions = position_ids_from_mask(mask)
        if self._multimodal is None:
            logits = self._step(input_ids, mask, positions, cache)  # [U, V]
        else:
            built = self._multimodal.model_inputs(input_ids, mask, [payloads[j] for j in firsts])
            extra = {
                k: v
                for k, v in built.kwargs.items()
                if k not in ("input_ids", "attention_mask", "position_ids")
            }
            model_positions = built.kwargs["position_ids"]  # e.g. M-RoPE (3, U, P)
            logits = self._step(input_ids, mask, model_positions, cache, extra=extra)
            positions = positions + built.position_offsets  # text positions after the media
        if len(distinct) == len(rows):
            return logits, mask, positions
        index = torch.tensor(owner, device=self._device)  # [N] row -> distinct prompt
        cache.reorder_cache(index)
        return logits[index], mask[index], positions[index]

    def _prefill_episodes(
        self,
        rows: Sequence[Sequence[int]],
        cache: DynamicCache,
        handles: Sequence[str | None],
        store: EpisodeKvStore,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`_prefill` for turns of episodes: a row whose episode holds a cache of a
        prefix of it prefills only the rest, on that cache; the others are prefilled
        together; then every row's keys and values are written left-padded into ``cache``.
        Returns what :meth:`_prefill` returns."""
        version = self.weights_version
        found = [
            None if h is None else store.lookup(h, row, version)
            for h, row in zip(handles, rows, strict=True)
        ]
        fresh = [i for i, held in enumerate(found) if held is None]
        per_row: list[tuple[LayerKv, ...]] = [()] * len(rows)
        logits: list[Tensor] = [torch.empty(0)] * len(rows)
        if fresh:
            scratch = DynamicCache(config=self._model.config)
            part, mask, _ = self._prefill([rows[i] for i in fresh], scratch, [{}] * len(fresh))
            width = mask.shape[1]
            for j, i in enumerate(fresh):
                logits[i] = part[j]
                per_row[i] = row_layers(scratch, j, width - len(rows[i]), width)
            store.stats.prefill_tokens += sum(len(rows[i]) for i in fresh)
        for i, held in enumerate(found):
            if held is None:
                continue
            own = row_cache(held, self._model.config)
            total, kept = len(rows[i]), len(held.ids)
            suffix = torch.tensor([rows[i][kept:]], dtype=torch.long, device=self._device)
            ones = torch.ones((1, total), dtype=torch.long, device=self._device)
            positions = suffix_positions(kept, total, self._device)
            logits[i] = self._step(suffix, ones, positions, own)[0]
            per_row[i] = row_layers(own, 0, 0, total)
            store.stats.prefill_tokens += total - kept
            store.stats.reused_tokens += kept
        _, mask = self._left_pad(rows)  # [N, P]
        fill_left_padded(cache, per_row, mask.shape[1])
        return torch.stack(logits), mask, position_ids_from_mask(mask)

    def _hold(
        self,
        store: EpisodeKvStore,
        cache: DynamicCache,
        rows: Sequence[Sequence[int]],
        handles: Sequence[str | None],
        active: Tensor,
        now_stopped: Tensor,
        out_ids: Tensor,
        width: int,
        step: int,
    ) -> None:
        """Keeps the caches of the episode rows that stopped at ``step``: the input and the
        ``step`` tokens fed so far (the stop token itself was sampled, never fed)."""
        version = self.weights_version
        for j in now_stopped.nonzero().flatten().tolist():
            i = int(active[j])
            handle = handles[i]
            if handle is None:
                continue
            ids = (*rows[i], *out_ids[i, :step].tolist())
            layers = row_layers(cache, j, width - len(rows[i]), width + step)
            store.keep(handle, HeldCache(tuple(ids), layers, version))

    def _step(
        self,
        input_ids: Tensor,
        mask: Tensor,
        positions: Tensor,
        cache: DynamicCache,
        model: torch.nn.Module | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Tensor:
        """Logits (N, V) of the next token after feeding ``input_ids`` (N, S); ``extra``:
        further forward arguments (media of a multimodal prefill)."""
        out = (self._model if model is None else model)(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
            **(extra or {}),
        )
        logits: Tensor = out.logits[:, -1]
        if self._multimodal is not None:
            logits = suppress_tokens(logits, self._multimodal.suppressed_token_ids)
        return logits

    def _decode_step(
        self, input_ids: Tensor, mask: Tensor, positions: Tensor, cache: DynamicCache
    ) -> Tensor:
        """One decode step's logits (N, V): the fused step when enabled, else the model's
        forward (see :meth:`_step`)."""
        if self._fused is not None:
            return self._fused.step(input_ids, mask, positions, cache)
        return self._step(input_ids, mask, positions, cache, self._decoder())

    @staticmethod
    def _fused_decoder(
        model: PreTrainedModel,
        device: torch.device,
        compile_decode: bool,
        multimodal: MultimodalInputs | None,
        quantized: QuantizedTargets | None,
        *,
        required: bool,
    ) -> FusedDecoder | None:
        """The fused decode steps for ``model``, or ``None`` (logged with the reason, as a
        warning when they were ``required``) when this engine cannot use them."""
        ruled_out = (
            (compile_decode, "compile_decode is on"),
            (multimodal is not None, "the engine reads media (multimodal)"),
            (quantized is not None, "the engine's weights are int8"),
        )
        reason = next((why for hit, why in ruled_out if hit), None)
        reason = reason or fused_decode_supported(model, device)
        if reason is not None:
            if required:
                log.warning("rollout.fused_decode_unavailable", reason=reason)
            else:
                log.info("rollout.fused_decode_off", reason=reason)
            return None
        return FusedDecoder(model)

    @contextmanager
    def _decode_mode(self, rows: int) -> Iterator[None]:
        """Decode steps of ``rows`` rows: grouped K/V heads read in place (CPU sdpa), the
        packed linear weights or the fused steps when enabled, and Python's cyclic garbage
        collector paused
        (each step allocates thousands of short-lived objects, which otherwise trigger
        collections that walk every live object, the model's included; about 5-10% of a
        CPU step; it resumes when the loop ends)."""
        with ExitStack() as stack:
            stack.enter_context(_gc_paused())
            if not self._compile_decode:  # a compiled model keeps its traced attention
                stack.enter_context(gqa_decode_attention(self._model.config, self._device))
            if self._packed is not None:
                stack.enter_context(self._packed.active(rows))
            if self._fused is not None:
                stack.enter_context(self._fused.active(rows))
            yield

    def _decoder(self) -> torch.nn.Module:
        """The module that runs decode steps: the model, or its compiled form."""
        if not self._compile_decode:
            return self._model
        if self._compiled is None:
            self._compiled = torch.compile(self._model, dynamic=True)
        return self._compiled

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
        """EOS ids of the tokenizer and generation config (none with
        ``sampling.ignore_eos``), plus ``sampling.stop_token_ids``; [-1] (no token) when empty."""
        ids = set(sampling.stop_token_ids)
        if sampling.ignore_eos:
            return sorted(ids) or [-1]
        if self._tokenizer.eos_token_id is not None:
            ids.add(int(self._tokenizer.eos_token_id))
        config_eos = getattr(getattr(self._model, "generation_config", None), "eos_token_id", None)
        if isinstance(config_eos, int):
            ids.add(config_eos)
        elif config_eos is not None:
            ids.update(int(i) for i in config_eos)
        return sorted(ids) or [-1]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's automatic garbage collection off within the block (restored after)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_shareable(model: PreTrainedModel, device: torch.device) -> None:
    """A module the engine may share with the policy: plain HF model on ``device``."""
    if hasattr(model, "peft_config"):
        raise ValueError(
            "shares_policy_weights needs the policy's plain model; a LoRA policy syncs merged "
            "weights, so give the engine its own model instead"
        )
    devices = {p.device for p in model.parameters()}
    if any(not _same_device(d, device) for d in devices):
        raise ValueError(
            f"shares_policy_weights: the module's parameters are on {sorted(map(str, devices))}, "
            f"not on the engine's device {device}"
        )


def _same_device(actual: torch.device, wanted: torch.device) -> bool:
    """Whether ``actual`` is ``wanted``; ``cuda`` (no index) matches any ``cuda:i``."""
    return actual.type == wanted.type and (wanted.index is None or actual.index == wanted.index)
