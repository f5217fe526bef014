"""``HfProcessRewardModel``: a process reward model (PRM) on a causal LM, as a reward source
(``process_rm``) and as the trainable model of ``lightrft rm train --kind process``.

Shape letters: B responses, T tokens, K steps of a response, N steps of a batch.

A response is cut into steps after each occurrence of the card's separator
(:func:`~lightrft.domain.process_rewards.split_steps`). The input is the prompt text (as the
policy saw it) followed by every step, each closed by the separator, the pieces tokenized
separately and concatenated (the same at training and scoring time); the last token of each
step (the separator's last token) is the step's end. A step's score is
p(+) = softmax over the two label tokens of the LM's logits at that end token =
sigmoid(l_+ - l_-) (Math-Shepherd, arXiv:2312.08935; the original LightRFT's and
OpenRLHF's PRM read the label tokens at the step tag the same way). The scores of a response
are aggregated into one reward (``min``, ``last``, ``product``, ``mean``) or, with
``aggregate: steps``, sum to the outcome reward while :meth:`step_scores` gives each one.

A vision-language backbone reads the prompt's media through ``media`` (the scalar reward
model's :class:`~lightrft.adapters.reward_models.media.PairMedia`); the expanded placeholders
shift the step ends by the expansion.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import structlog
import torch
from torch import Tensor, nn
from transformers import AutoModelForCausalLM

from lightrft.adapters.model_parts.column_logits import logits_at_columns
from lightrft.adapters.model_parts.host_offload import HostOffload
from lightrft.adapters.model_parts.positions import position_ids_from_mask
from lightrft.adapters.reward_models.encoding import pad_rows
from lightrft.adapters.reward_models.loading import DTYPES, load_reward_tokenizer
from lightrft.adapters.reward_models.media import PairMedia
from lightrft.adapters.reward_models.process_card import ProcessRewardCard
from lightrft.adapters.reward_parts.source_bases import ColocatedModelSource
from lightrft.domain.modality import Payload
from lightrft.domain.process_rewards import (
    STEP_AGGREGATIONS,
    StepLabelledExample,
    aggregate_steps,
    split_steps,
    step_probabilities,
)
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)

STEPS = "steps"
"""``aggregate`` value: pass the step scores on (their sum is the outcome score)."""


@dataclass(frozen=True)
class EncodedSteps:
    """One (prompt, steps) row: its token ids and the position of each step's last token."""

    ids: list[int]
    ends: list[int]


def label_token_id(tokenizer: Any, token: str) -> int:
    """The id of ``token``, which must be exactly one token of ``tokenizer``."""
    ids = tokenizer(token, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise ValueError(f"label token {token!r} is {len(ids)} tokens of this tokenizer, not 1")
    return int(ids[0])


def response_token_ends(
    tokenizer: Any, token_ids: Sequence[int], char_ends: Sequence[int]
) -> list[int]:
    """For each character end (exclusive) of the response text, the index of the response
    token whose decoded prefix first reaches it (the token holding that step's last
    character); the last token when the decoded text is shorter. The PRM must share the
    policy's tokenizer (the response ids are decoded with the PRM's)."""
    if not token_ids:
        return []
    lengths = [
        len(tokenizer.decode(list(token_ids[: j + 1]), skip_special_tokens=True))
        for j in range(len(token_ids))
    ]
    return [min(bisect_left(lengths, end), len(token_ids) - 1) for end in char_ends]


class HfProcessRewardModel(HostOffload, ColocatedModelSource):
    """Step scores from a causal LM's logits of two label tokens at each step's end.

    Args:
        lm: the HF causal LM (``AutoModelForCausalLM``, or a vision-language LM with ``media``).
        tokenizer: its tokenizer (a pad token is set when it has none).
        device: where the weights live while onloaded.
        card: separator, label tokens, encoding, modality.
        media: the family's media reader (None: text only).
        name: the reward source's name; aggregate: a ``STEP_AGGREGATIONS`` name or ``steps``;
        micro_batch_size: rows per forward; empty_score: the reward of a response without steps.
        step_threshold: None, or each step score becomes 1 at or above it and 0 below before
            it is aggregated or passed on (a PRM's confident verdicts only: a group whose
            steps are all judged alike then gets no process advantage from score noise).
    """

    def __init__(
        self,
        lm: Any,
        tokenizer: Any,
        device: torch.device,
        *,
        card: ProcessRewardCard | None = None,
        media: PairMedia | None = None,
        name: str = "process_rm",
        aggregate: str = "min",
        micro_batch_size: int = 8,
        empty_score: float = 0.0,
        step_threshold: float | None = None,
    ) -> None:
        if step_threshold is not None and not 0.0 <= step_threshold <= 1.0:
            raise ValueError(f"step_threshold must be in [0, 1], got {step_threshold}")
        if aggregate != STEPS:
            STEP_AGGREGATIONS.get(aggregate)  # names the choices when unknown
        if micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.card = card or ProcessRewardCard()
        self.lm = lm
        self.media = media
        self.tokenizer = tokenizer
        self.positive_id = label_token_id(tokenizer, self.card.positive_token)
        self.negative_id = label_token_id(tokenizer, self.card.negative_token)
        self.aggregate = aggregate
        self.empty_score = empty_score
        self.step_threshold = step_threshold
        self._name = name
        self._device = device
        self._micro_batch_size = micro_batch_size
        self._placed = lm
        lm.to(device)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        device: torch.device,
        *,
        dtype: str = "float32",
        trust_remote_code: bool = False,
        **options: Any,
    ) -> HfProcessRewardModel:
        """A saved PRM directory (or a plain causal LM: the default card), frozen, eval mode."""
        tokenizer = load_reward_tokenizer(path, trust_remote_code=trust_remote_code)
        lm = load_process_lm(path, device, dtype=dtype, trust_remote_code=trust_remote_code)
        lm.requires_grad_(False)
        lm.eval()
        card = ProcessRewardCard.load(path) or ProcessRewardCard()
        return cls(lm, tokenizer, device, card=card, **options)

    # -- encoding ---------------------------------------------------------------------------

    def encode(self, prompt: str, steps: Sequence[str]) -> EncodedSteps:
        """Token ids of ``prompt`` + each step closed by the separator, and each step's end.

        Longer than ``max_length``: tokens go from the left of the prompt; when the steps
        alone are longer, ``ValueError``.
        """
        encoding, separator = self.card.encoding, self.card.separator
        ids = list(
            self.tokenizer(prompt, add_special_tokens=encoding.prompt_special_tokens)["input_ids"]
        )
        prompt_length = len(ids)
        ends = []
        pieces = [s if s.endswith(separator) else s + separator for s in steps]
        tokenized = self.tokenizer(pieces, add_special_tokens=False)["input_ids"] if pieces else []
        for piece in tokenized:
            ids.extend(piece)
            ends.append(len(ids) - 1)
        cut = 0 if encoding.max_length is None else max(0, len(ids) - encoding.max_length)
        if cut > prompt_length:
            raise ValueError(
                f"the steps are {len(ids) - prompt_length} tokens, more than max_length "
                f"({encoding.max_length})"
            )
        return EncodedSteps(ids[cut:], [end - cut for end in ends])

    # -- scoring ----------------------------------------------------------------------------

    @property
    def module(self) -> nn.Module:
        """The network a training strategy wraps (the causal LM)."""
        return cast(nn.Module, self.lm)

    def step_logits(
        self, rows: Sequence[EncodedSteps], payloads: Sequence[Payload] = ()
    ) -> tuple[Tensor, Tensor]:
        """Logits (N,) of the positive and of the negative label token at every step end of
        ``rows``, row by row in step order; autograd follows the caller."""
        ids_rows, ends = [r.ids for r in rows], [r.ends for r in rows]
        kwargs: dict[str, Any]
        if payloads and any(payloads):
            if self.media is None:
                raise ValueError("a row has media but the process reward model reads text only")
            expanded = []
            for i, (row, payload) in enumerate(zip(ids_rows, payloads, strict=True)):
                if payload:
                    new_row, payload = self.media.expand(row, payload, f"row {i}")
                    shift = len(new_row) - len(row)
                    ends[i] = [end + shift for end in ends[i]]
                    row = new_row
                expanded.append((row, payload))
            ids, mask = pad_rows(self.tokenizer, [r for r, _ in expanded], "right")
            ids, mask = ids.to(self._device), mask.to(self._device)
            kwargs = self.media.model_kwargs(ids, mask, [p for _, p in expanded])
        else:
            ids, mask = pad_rows(self.tokenizer, ids_rows, "right")
            ids, mask = ids.to(self._device), mask.to(self._device)
            kwargs = {
                "input_ids": ids,
                "attention_mask": mask,
                "position_ids": position_ids_from_mask(mask),
            }
        row_index = torch.tensor(
            [i for i, row_ends in enumerate(ends) for _ in row_ends], dtype=torch.long
        )
        positions = torch.tensor([e for row_ends in ends for e in row_ends], dtype=torch.long)
        # the LM head only at the columns where some row's step ends (S of T): [B, S, V]
        columns, column_of = torch.unique(positions, return_inverse=True)
        logits = logits_at_columns(self.lm, columns.to(ids.device), **kwargs)
        at_ends = logits[row_index.to(logits.device), column_of.to(logits.device)]  # [N, V]
        return at_ends[:, self.positive_id], at_ends[:, self.negative_id]

    def example_logits(self, examples: Sequence[StepLabelledExample]) -> tuple[Tensor, Tensor]:
        """:meth:`step_logits` of training rows (their prompt, steps and media)."""
        rows = [self.encode(e.prompt, e.steps) for e in examples]
        payloads: list[Payload] = [e.multimodal or {} for e in examples]
        return self.step_logits(rows, payloads if any(payloads) else ())

    def step_scores(self, samples: Sequence[RewardSample]) -> list[Tensor]:
        """Each response's step scores p(+) (K,) float32, K its steps (0 for an empty text)."""
        if self._offloaded:
            raise RuntimeError(f"reward model {self._name!r} is offloaded; call onload() first")
        separator = self.card.separator
        split = [split_steps(s.completion.text, separator) for s in samples]
        out: list[Tensor] = []
        was_training = self.lm.training
        self.lm.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(samples), self._micro_batch_size):
                    chunk = range(start, min(start + self._micro_batch_size, len(samples)))
                    scored = [i for i in chunk if split[i]]
                    rows = [
                        self.encode(
                            samples[i].prompt.prompt_text,
                            [samples[i].completion.text[p.start : p.end] for p in split[i]],
                        )
                        for i in scored
                    ]
                    payloads = [samples[i].prompt.multimodal for i in scored] if self.media else []
                    probs = (
                        step_probabilities(*self.step_logits(rows, payloads)).cpu()
                        if rows
                        else torch.zeros(0)
                    )
                    counts = {i: len(split[i]) for i in scored}
                    offset = 0
                    for i in chunk:
                        k = counts.get(i, 0)
                        out.append(probs[offset : offset + k])
                        offset += k
        finally:
            self.lm.train(was_training)
        return out

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """One reward (B,) per response, its step scores aggregated by ``aggregate``; with
        ``steps`` the reward is 0 and each step's score is passed on at the step's last
        token of the response (``RewardResult.step_rewards``, for ``process_grpo``)."""
        scores = self.step_scores(samples)
        steps = torch.tensor([float(len(s)) for s in scores])
        all_steps = torch.cat(scores) if scores else torch.zeros(0)
        metrics = {
            "steps_mean": steps.mean() if len(steps) else torch.tensor(0.0),
            "step_score_mean": all_steps.mean() if all_steps.numel() else torch.tensor(0.0),
        }
        if self.step_threshold is not None:
            scores = [(s >= self.step_threshold).float() for s in scores]
            passed = torch.cat(scores) if scores else torch.zeros(0)
            metrics["step_pass_rate"] = passed.mean() if passed.numel() else torch.tensor(0.0)
        if self.aggregate != STEPS:
            return RewardResult(aggregate_steps(scores, self.aggregate, self.empty_score), metrics)
        separator = self.card.separator
        step_rewards = []
        for sample, row in zip(samples, scores, strict=True):
            spans = split_steps(sample.completion.text, separator)
            ends = response_token_ends(
                self.tokenizer, sample.completion.token_ids, [p.end for p in spans]
            )
            step_rewards.append(tuple(zip(ends, row.tolist(), strict=True)))
        return RewardResult(torch.zeros(len(samples)), metrics, tuple(step_rewards))

    def onload(self) -> None:
        """Moves the weights to the device."""
        super().onload()

    def offload(self) -> None:
        """Moves the weights to host memory."""
        super().offload()

    def close(self) -> None:
        """Nothing to release."""

    # -- export -----------------------------------------------------------------------------

    def export_hf(
        self, directory: str | Path, *, state: Mapping[str, Tensor] | None = None
    ) -> Path:
        """Writes the LM (safetensors), the tokenizer and the card (json + README)."""
        directory = Path(directory)
        if state is not None:
            self.lm.load_state_dict(dict(state))
        self.lm.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
        self.card.save(directory)
        log.info("process_reward_model.exported", directory=str(directory))
        return directory


def load_process_lm(
    path: str | Path,
    device: torch.device,
    *,
    dtype: str = "float32",
    trust_remote_code: bool = False,
    attn_implementation: str = "sdpa",
) -> Any:
    """The causal LM in ``path`` on ``device`` (offline only)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"process reward model directory {directory} does not exist")
    lm: Any = AutoModelForCausalLM.from_pretrained(
        str(directory),
        dtype=DTYPES[dtype],
        attn_implementation=attn_implementation,
        local_files_only=True,
        trust_remote_code=trust_remote_code,
    )
    return lm.to(device)
