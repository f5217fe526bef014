"""Value objects that flow between the ports and the services.

Shape letters: B samples, P prompt tokens (left-padded), R response tokens (right-padded),
T = P + R sequence tokens.

Sequence layout used everywhere: ``input_ids`` (B, T) is a left-padded prompt followed by a
right-padded response, so every response starts at column ``T - R``. Response-aligned
tensors (``response_mask``, ``old_logprobs``, ``advantages`` ...) are (B, R); the log-prob
of response token ``t`` is predicted from column ``T - R + t - 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import torch
from torch import Tensor

from lightrft.domain.checks import check_non_negative, check_shape
from lightrft.domain.modality import Payload, batch_payloads
from lightrft.domain.optimizer_params import OptimizerParams as OptimizerParams
from lightrft.domain.sampling_params import SamplingParams as SamplingParams
from lightrft.domain.trajectory import Episode

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class PromptRecord:
    """One prompt, already rendered (chat template applied) and tokenized.

    ``reference`` is the verifiable answer (RLVR) if there is one; ``multimodal`` holds
    opaque model inputs (images, audio) that only adapters interpret.
    """

    uid: str
    prompt_text: str
    prompt_token_ids: tuple[int, ...]
    reference: str | None = None
    multimodal: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.prompt_token_ids:
            raise ValueError(f"prompt {self.uid!r} has no tokens")


@dataclass(frozen=True)
class Completion:
    """One sampled response to ``PromptRecord`` number ``prompt_index`` of a request batch.

    ``logprobs`` are the engine's log-probs of ``token_ids`` under the distribution it
    actually sampled from (after temperature), one per token.

    A multi-turn episode (:mod:`lightrft.domain.trajectory`) is one completion too:
    ``token_ids`` are all its turns and observations, ``loss_mask`` is 1 on the generated
    ones (``None``: every token was generated), ``logprobs`` are 0.0 on observation tokens and
    ``episode`` keeps the turns, rewards and counters.

    ``token_versions`` (partial rollouts, :mod:`lightrft.domain.partial_rollout`) is the
    policy version that sampled each token (``None``: one version, the batch's).

    ``multimodal``: the row's media payload when its tokens hold media of their own (an
    episode whose observations returned images: the prompt's media then the observations');
    ``None``: the prompt's payload is the row's.
    """

    prompt_index: int
    token_ids: tuple[int, ...]
    text: str
    finish_reason: FinishReason
    logprobs: tuple[float, ...] | None = None
    loss_mask: tuple[int, ...] | None = None
    episode: Episode | None = None
    token_versions: tuple[int, ...] | None = None
    # the ids the response follows when they are not the request's prompt (a rollout-gateway
    # row: the prompt the agent's own first call rendered, lightrft/domain/token_continuity.py)
    prompt_token_ids: tuple[int, ...] | None = None
    multimodal: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.prompt_token_ids is not None and not self.prompt_token_ids:
            raise ValueError("a completion's own prompt_token_ids must not be empty")
        for name in ("logprobs", "loss_mask", "token_versions"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.token_ids):
                raise ValueError(
                    f"completion has {len(self.token_ids)} tokens but {len(values)} {name}"
                )
        if self.loss_mask is not None and not set(self.loss_mask) <= {0, 1}:
            raise ValueError("loss_mask holds values other than 0 and 1")

    @property
    def trained_mask(self) -> tuple[int, ...]:
        """1 where a token counts in the loss: ``loss_mask``, or all ones."""
        return self.loss_mask if self.loss_mask is not None else (1,) * len(self.token_ids)


@dataclass(frozen=True)
class RewardSample:
    """What a reward source judges: the prompt and one completion of it."""

    prompt: PromptRecord
    completion: Completion

    @property
    def group(self) -> int:
        """The sample's group within one ``score`` call: samples of the same prompt (the
        ``n`` completions the engine drew for it) share ``completion.prompt_index``."""
        return self.completion.prompt_index


@dataclass(frozen=True)
class RewardResult:
    """Scores of a batch. ``scores`` (B,); ``metrics`` detached scalars per source."""

    scores: Tensor
    metrics: Mapping[str, Tensor] = field(default_factory=dict)
    # process rewards: per sample, (response token index, score) of each step's last token
    step_rewards: tuple[tuple[tuple[int, float], ...], ...] | None = None


@dataclass(frozen=True)
class SequenceBatch:
    """Model inputs for log-prob computation.

    Shapes: ``input_ids`` (B, T), ``attention_mask`` (B, T), ``response_mask`` (B, R).
    Responses occupy the last R columns (see the module docstring). ``multimodal`` holds one
    opaque payload per row (the prompt's ``PromptRecord.multimodal``), or ``()`` when every
    row is text-only (see :mod:`lightrft.domain.modality`); ``bool(batch.multimodal)`` tells
    whether any row has media.
    """

    input_ids: Tensor
    attention_mask: Tensor
    response_mask: Tensor
    multimodal: tuple[Payload, ...] = ()

    def __post_init__(self) -> None:
        rows = int(self.input_ids.shape[0]) if self.input_ids.dim() else 0
        object.__setattr__(self, "multimodal", batch_payloads(self.multimodal, rows))
        check_shape("input_ids", self.input_ids, (None, None))
        check_shape("attention_mask", self.attention_mask, tuple(self.input_ids.shape))
        check_shape("response_mask", self.response_mask, (self.input_ids.shape[0], None))
        if self.response_mask.shape[1] > self.input_ids.shape[1]:
            raise ValueError(
                f"response_mask has {self.response_mask.shape[1]} columns but input_ids only "
                f"{self.input_ids.shape[1]}"
            )

    @property
    def response_length(self) -> int:
        """R, the number of response columns."""
        return int(self.response_mask.shape[1])

    def select(self, index: Tensor) -> SequenceBatch:
        """Rows ``index`` (1-D long tensor) of every tensor."""
        payloads = self.multimodal
        return replace(
            self,
            input_ids=self.input_ids[index],
            attention_mask=self.attention_mask[index],
            response_mask=self.response_mask[index],
            multimodal=tuple(payloads[i] for i in index.tolist()) if payloads else (),
        )

    def to(self, device: torch.device | str) -> SequenceBatch:
        """The same rows with ``input_ids`` and the masks on ``device`` (``self`` when they
        are there already). Media payloads stay where they are: the model's input builder
        moves the tensors it makes of them."""
        target = torch.device(device)
        if self.input_ids.device == target:
            return self
        return replace(
            self,
            input_ids=self.input_ids.to(target),
            attention_mask=self.attention_mask.to(target),
            response_mask=self.response_mask.to(target),
        )


@dataclass(frozen=True)
class Experience:
    """A scored, advantage-annotated batch of rollouts, ready for optimization.

    Shapes: ``sequences`` as :class:`SequenceBatch`; ``old_logprobs``, ``ref_logprobs``,
    ``rollout_logprobs``, ``advantages``, ``returns``, ``values`` (B, R);
    ``rewards``, ``group_index`` (B,). ``old_logprobs`` is ``None`` for strictly on-policy
    training (one optimizer step per batch): the old policy is then the current one, and the
    optimizer uses the current log-probs, detached, instead of a second forward pass.
    """

    sequences: SequenceBatch
    old_logprobs: Tensor | None
    advantages: Tensor
    returns: Tensor
    rewards: Tensor
    group_index: Tensor
    ref_logprobs: Tensor | None = None
    rollout_logprobs: Tensor | None = None
    values: Tensor | None = None

    def __post_init__(self) -> None:
        b, r = self.sequences.response_mask.shape
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "sequences" or value is None:
                continue
            check_shape(f.name, value, (b,) if f.name in ("rewards", "group_index") else (b, r))

    @property
    def response_mask(self) -> Tensor:
        """(B, R) mask of response tokens."""
        return self.sequences.response_mask

    def __len__(self) -> int:
        return int(self.rewards.shape[0])

    def select(self, index: Tensor) -> Experience:
        """Rows ``index`` (1-D long tensor) of every tensor."""
        return self._mapped(self.sequences.select(index), lambda value: value[index])

    def to(self, device: torch.device | str) -> Experience:
        """Every tensor on ``device``."""
        target = torch.device(device)
        return self._mapped(self.sequences.to(target), lambda value: value.to(target))

    def _mapped(self, sequences: SequenceBatch, change: Callable[[Tensor], Tensor]) -> Experience:
        """``sequences`` and ``change`` applied to every other tensor field."""
        updates: dict[str, Any] = {"sequences": sequences}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "sequences" and isinstance(value, Tensor):
                updates[f.name] = change(value)
        return replace(self, **updates)


@dataclass(frozen=True)
class StepResult:
    """What one optimizer step did. ``grad_norm`` is the norm before clipping."""

    grad_norm: float
    lr: float
    skipped: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class MemoryStats:
    """Device memory in bytes (0 where the device cannot tell)."""

    allocated: int = 0
    reserved: int = 0
    peak_allocated: int = 0


HEAD_VERDICTS = ("chosen", "rejected", "tie")
"""What one score head of a preference pair is taught (:attr:`PreferencePair.head_labels`)."""


RESPONSE_SIDES = ("chosen", "rejected")
"""The keys of :attr:`PreferencePair.multimodal` holding media responses' own items."""


@dataclass(frozen=True)
class PreferencePair:
    """One preference: ``chosen`` is the better response to ``prompt`` than ``rejected``.

    ``prompt`` is rendered text (chat template applied), as a policy's prompt would be;
    ``margin`` (>= 0) asks the Bradley-Terry loss for at least that score gap.
    ``chosen_sign`` / ``rejected_sign``: safety labels of a cost model's rows (``chosen`` is
    then the more harmful response): +1 unsafe, -1 safe, 0 unlabeled (no sign term).
    ``multimodal``: the prompt's media (opaque to the services, :mod:`.modality`; the prompt
    text holds one model placeholder per item), shared by both responses; when the responses
    are media themselves (a text-to-image preference), each one's items sit under
    ``multimodal["chosen"]`` / ``multimodal["rejected"]`` (kind -> items) and the response
    text holds one placeholder per item (:meth:`response_media`).
    ``head_labels``: for a reward model with named score heads (one per aspect), the
    aspect's verdict when it differs from the pair's: head name -> ``"chosen"``,
    ``"rejected"`` (this aspect prefers the other response) or ``"tie"``; a head not named
    prefers ``chosen``.
    """

    uid: str
    prompt: str
    chosen: str
    rejected: str
    margin: float = 0.0
    chosen_sign: int = 0
    rejected_sign: int = 0
    multimodal: Mapping[str, Any] = field(default_factory=dict)
    head_labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_non_negative("margin", self.margin)
        for name in ("chosen_sign", "rejected_sign"):
            if getattr(self, name) not in (-1, 0, 1):
                raise ValueError(
                    f"{name} must be +1 (unsafe), -1 (safe) or 0, got {getattr(self, name)!r}"
                )
        for head, label in self.head_labels.items():
            if label not in HEAD_VERDICTS:
                raise ValueError(
                    f"head_labels[{head!r}] must be one of {', '.join(HEAD_VERDICTS)}, "
                    f"got {label!r}"
                )

    def response_media(self, side: str) -> dict[str, Any]:
        """The media a reward model reads with one response (``side``: ``chosen`` or
        ``rejected``): the prompt's media, then that response's own, by kind (in the order
        their placeholders appear in prompt + response). Pairs whose responses are text give
        the prompt's media for both sides."""
        if side not in RESPONSE_SIDES:
            raise ValueError(f"side must be chosen or rejected, got {side!r}")
        payload: dict[str, Any] = {
            kind: items for kind, items in self.multimodal.items() if kind not in RESPONSE_SIDES
        }
        for kind, items in self.multimodal.get(side, {}).items():
            payload[kind] = [*payload.get(kind, ()), *items]
        return payload
