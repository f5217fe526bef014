"""``FakeRolloutEngine``: the ``RolloutEngine`` port, sampling from its own tiny GRU.

Shape letters: B = prompts x n rows, P prompt tokens (left-padded), V vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from lightrft.adapters.engine_parts.rollout_engine_base import RolloutEngineBase
from lightrft.adapters.fakes import task
from lightrft.adapters.fakes.tiny_lm import TinyGruLm, seeded
from lightrft.adapters.fakes.token_sampling import sample_tokens
from lightrft.domain.partial_rollout import ChunkProgress
from lightrft.domain.ports import NamedTensors
from lightrft.domain.sampling import token_temperature
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams
from lightrft.domain.weight_checksum import weights_checksum


@dataclass
class _Row:
    """The growing response of one row."""

    prompt_index: int
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: FinishReason | None = None


@dataclass
class _Generation:
    """A generation between chunks: its rows, random stream and decoding state (``logits``
    ``None``: to be read from the prompts and tokens so far, e.g. after new weights)."""

    prompts: list[PromptRecord]
    sampling: SamplingParams
    rows: list[_Row]
    generator: torch.Generator
    logits: Tensor | None = None
    state: Tensor | None = None
    position: int = 0
    done: bool = False


def _left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    """Left-padded ids and attention mask. Shape: (B, P) each."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        if prompt:
            ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            mask[row, width - len(prompt) :] = 1
    return ids, mask


class FakeRolloutEngine(RolloutEngineBase):
    """Autoregressive sampling on CPU from a private :class:`TinyGruLm`.

    Built from the same class and ``seed`` as :class:`FakePolicy`, so before any sync it
    holds the initial policy's weights. Log-probs are those of ``softmax(logits / T)`` at
    the temperature each token was drawn with (``first_token_temperature`` for token 0
    under FIRE), before top-k / top-p / min-p filtering. The stop token is kept in
    ``token_ids``; a stop string ends the text (which excludes it).

    Records ``generate_calls``, ``requests`` (number of prompts, sampling) per call,
    ``weight_syncs``, ``sleeps`` and ``wake_ups``. ``generate`` and ``load_weights`` while
    asleep raise ``RuntimeError``. Partial rollouts: ``begin_generation`` /
    ``continue_generation`` / ``finish_generation``
    (:class:`~lightrft.domain.partial_rollout.ResumableEngine`).
    """

    def __init__(
        self,
        vocab_size: int = 16,
        hidden: int = 32,
        seed: int = 0,
        *,
        eos_token_id: int = task.EOS_ID,
        pad_token_id: int = task.PAD_ID,
        decode: Callable[[Sequence[int]], str] = task.decode,
        device: torch.device | None = None,
    ) -> None:
        self.device = device or torch.device("cpu")
        self._module = seeded(seed, lambda: TinyGruLm(vocab_size, hidden)).to(self.device)
        self._module.eval().requires_grad_(False)
        self._generator = torch.Generator().manual_seed(seed)
        self._eos = eos_token_id
        self._pad = pad_token_id
        self._decode = decode
        self._awake = True
        self.generate_calls = 0
        self.requests: list[tuple[int, SamplingParams]] = []
        self.weight_syncs = 0
        self.sleeps = 0
        self.wake_ups = 0
        self._generation: _Generation | None = None

    def named_parameters(self) -> dict[str, Tensor]:
        """Detached clones of the engine's weights (for tests)."""
        return {n: p.detach().clone() for n, p in self._module.named_parameters()}

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt, grouped: prompt i owns [i*n, (i+1)*n)."""
        generation = self._begin(prompts, sampling)
        with torch.no_grad():
            self._advance(generation, sampling.max_new_tokens)
        return [self._completion(row, sampling.stop_strings) for row in generation.rows]

    # -- partial rollouts (ResumableEngine) ----------------------------------------------

    @property
    def can_resume(self) -> bool:
        """Always: a generation can pause between chunks and resume, also after new weights."""
        return True

    def begin_generation(self, prompts: Sequence[PromptRecord], sampling: SamplingParams) -> None:
        """Starts a generation that ``continue_generation`` advances chunk by chunk."""
        self._generation = self._begin(prompts, sampling)

    def continue_generation(self, max_new_tokens: int) -> ChunkProgress:
        """At most ``max_new_tokens`` more tokens per unfinished row. After a
        ``load_weights`` the rows' prompts and tokens so far are read again with the new
        weights; without one, the chunks together equal one ``generate`` exactly."""
        if self._generation is None:
            raise RuntimeError("continue_generation() without begin_generation()")
        self._require_awake("continue_generation")
        with torch.no_grad():
            return self._advance(self._generation, max_new_tokens)

    def finish_generation(self) -> list[Completion]:
        """The completions of the generation begun last; it must be done."""
        generation, self._generation = self._generation, None
        if generation is None or not generation.done:
            raise RuntimeError("finish_generation() before the generation is done")
        stop_strings = generation.sampling.stop_strings
        return [self._completion(row, stop_strings) for row in generation.rows]

    def _begin(self, prompts: Sequence[PromptRecord], sampling: SamplingParams) -> _Generation:
        self._require_awake("generate")
        self.generate_calls += 1
        self.requests.append((len(prompts), sampling))
        generator = self._generator
        if sampling.seed is not None:
            generator = torch.Generator().manual_seed(sampling.seed)
        rows = [_Row(i) for i in range(len(prompts)) for _ in range(sampling.n)]
        return _Generation(list(prompts), sampling, rows, generator, done=not rows)

    def _advance(self, g: _Generation, budget: int) -> ChunkProgress:
        """Samples up to ``budget`` positions of every row (all rows draw at each position,
        finished ones too, as in one uninterrupted generation)."""
        before = [len(row.token_ids) for row in g.rows]
        sampling = g.sampling
        stop_ids = set(sampling.stop_token_ids) | (set() if sampling.ignore_eos else {self._eos})
        if not g.done and g.logits is None:  # first chunk, or new weights: read the rows
            ids, mask = _left_pad(
                [g.prompts[r.prompt_index].prompt_token_ids + tuple(r.token_ids) for r in g.rows],
                self._pad,
            )
            g.logits, g.state = self._module.start(ids.to(self.device), mask.to(self.device))
        for _ in range(budget):
            if g.done:
                break
            tokens, logprobs = sample_tokens(
                g.logits,
                token_temperature(sampling, g.position),
                g.generator,
                top_k=sampling.top_k,
                top_p=sampling.top_p,
                min_p=sampling.min_p,
            )
            for row, token, logprob in zip(g.rows, tokens.tolist(), logprobs.tolist(), strict=True):
                if row.finish_reason is None:
                    row.token_ids.append(token)
                    row.logprobs.append(logprob)
                    if token in stop_ids or self._hits_stop_string(row, sampling):
                        row.finish_reason = "stop"
            g.position += 1
            if all(row.finish_reason is not None for row in g.rows):
                g.done = True
            elif g.position == sampling.max_new_tokens:
                for row in g.rows:
                    row.finish_reason = row.finish_reason or "length"
                g.done = True
            else:
                g.logits, g.state = self._module.step(tokens, g.state)
        added = tuple(len(row.token_ids) - n for row, n in zip(g.rows, before, strict=True))
        return ChunkProgress(added, g.done)

    def _hits_stop_string(self, row: _Row, sampling: SamplingParams) -> bool:
        """Whether the row's text now contains one of ``sampling.stop_strings``."""
        if not sampling.stop_strings:
            return False
        text = self._decode(row.token_ids)
        return any(stop in text for stop in sampling.stop_strings)

    def _completion(self, row: _Row, stop_strings: Sequence[str] = ()) -> Completion:
        """The :class:`Completion` of a finished row; the text stops before a stop string."""
        text = self._decode(row.token_ids)
        cuts = [text.find(stop) for stop in stop_strings if stop in text]
        return Completion(
            prompt_index=row.prompt_index,
            token_ids=tuple(row.token_ids),
            text=text[: min(cuts)] if cuts else text,
            finish_reason=row.finish_reason or "length",
            logprobs=tuple(row.logprobs),
        )

    def load_weights(self, weights: NamedTensors) -> None:
        """Copies named tensors into the engine's model (names as ``named_parameters``).

        Unknown names raise ``KeyError`` and shape mismatches ``ValueError``; a partial set
        of names updates just those. Counts one ``weight_syncs`` per call.
        """
        if not self._awake:
            raise RuntimeError("FakeRolloutEngine.load_weights called while asleep; wake_up first")
        params = dict(self._module.named_parameters())
        with torch.no_grad():
            for name, tensor in weights:
                if name not in params:
                    raise KeyError(f"engine has no weight {name!r}; it has {sorted(params)}")
                if tuple(tensor.shape) != tuple(params[name].shape):
                    raise ValueError(
                        f"weight {name!r} has shape {tuple(tensor.shape)}, "
                        f"engine expects {tuple(params[name].shape)}"
                    )
                params[name].copy_(tensor)
        self.weight_syncs += 1
        if self._generation is not None:
            self._generation.logits = None  # the paused rows continue with the new weights

    @property
    def weights_dtype(self) -> torch.dtype | None:
        """Synced weights are stored as sent (copied into float32 parameters)."""
        return torch.float32

    def weights_checksum(self, names: Sequence[str]) -> str:
        """Checksum of the engine's current tensors under ``names`` (unknown: ``KeyError``)."""
        params = dict(self._module.named_parameters())
        return weights_checksum((name, params[name]) for name in names)

    def sleep(self) -> None:
        """Marks weights and cache as released (CPU: nothing moves)."""
        self.sleeps += 1
        self._awake = False

    def wake_up(self) -> None:
        """Marks the engine ready to generate again."""
        self.wake_ups += 1
        self._awake = True
