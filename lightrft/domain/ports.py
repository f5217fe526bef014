"""Ports: the interfaces the services need from the outside world.

Every port is a ``typing.Protocol``; adapters (``lightrft.adapters``) implement them on
Hugging Face, DeepSpeed, FSDP2, vLLM ..., and ``lightrft.adapters.fakes`` holds small honest
CPU implementations for tests. Shape letters as in :mod:`lightrft.domain.types`. The ports of
multi-turn agents (``Environment``, ``Tool``, ``TurnRenderer``) are in :mod:`lightrft.domain.agent`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from torch import Tensor, nn

from lightrft.domain.eval_metrics import GradedAnswer
from lightrft.domain.modality import Payload
from lightrft.domain.process_rewards import StepLabelledExample
from lightrft.domain.sandbox import SandboxLimits, SandboxResult
from lightrft.domain.types import (
    Completion,
    MemoryStats,
    PromptRecord,
    RewardResult,
    RewardSample,
    SamplingParams,
    SequenceBatch,
    StepResult,
)

NamedTensors = Iterable[tuple[str, Tensor]]


class PolicyOutput(NamedTuple):
    """Per-token results of a forward pass. Shapes (B, R); ``entropy`` only when asked."""

    logprobs: Tensor
    entropy: Tensor | None = None


@runtime_checkable
class Policy(Protocol):
    """A causal (vision/audio-)language model whose response-token log-probs we train."""

    @property
    def module(self) -> nn.Module:
        """The ``nn.Module`` the training strategy wraps (sharding happens in place)."""
        ...

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens of ``batch`` (and their entropy).

        Runs with autograd when the caller is under grad mode; padding positions hold 0.
        """
        ...

    def weights_for_sync(self, full_state: NamedTensors) -> Iterator[tuple[str, Tensor]]:
        """Turns the gathered module state into the tensors an engine loads (LoRA merged)."""
        ...


@runtime_checkable
class Critic(Protocol):
    """A value model for PPO with GAE: one value per response token."""

    @property
    def module(self) -> nn.Module:
        """The ``nn.Module`` the training strategy wraps."""
        ...

    def values(self, batch: SequenceBatch) -> Tensor:
        """Values V_t, shape (B, R), 0 on padding."""
        ...


@runtime_checkable
class ReferenceModel(Protocol):
    """A frozen model for the KL term; may live in host memory between uses."""

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens, never with autograd."""
        ...

    def offload(self) -> None:
        """Moves the weights off the accelerator."""
        ...

    def onload(self) -> None:
        """Brings the weights back to the accelerator."""
        ...


@runtime_checkable
class RolloutEngine(Protocol):
    """Generates completions. Asleep, it holds no accelerator memory and must not generate."""

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt, grouped: prompt i owns [i*n, (i+1)*n)."""
        ...

    def load_weights(self, weights: NamedTensors) -> None:
        """Replaces the engine's weights with the policy's (names as ``weights_for_sync``)."""
        ...

    def sleep(self) -> None:
        """Frees accelerator memory (weights and KV cache) until ``wake_up``."""
        ...

    def wake_up(self) -> None:
        """Restores what ``sleep`` freed; outputs after a round trip are unchanged."""
        ...

    @property
    def is_awake(self) -> bool:
        """Whether ``generate`` may be called."""
        ...

    @property
    def shares_policy_weights(self) -> bool:
        """Whether the engine runs the trained policy's own module (then the policy must be
        awake whenever the engine is, and a weight sync copies nothing)."""
        ...


class RewardSourceUnavailableError(RuntimeError):
    """A reward source that cannot score a batch at all (its service is down, slow, or
    answers wrongly); the message says where and why. The training cycle treats it as a
    failing source: it checkpoints the state before the step and stops."""


@runtime_checkable
class RewardSource(Protocol):
    """Scores completions: rule verifiers, reward models, judges, remote services."""

    @property
    def name(self) -> str:
        """Name used for metrics and for the weight in a composite reward."""
        ...

    @property
    def runs_concurrently(self) -> bool:
        """Whether the source may score on a thread beside other sources (rules, remote
        services); False for a model on this process's device (scored one at a time)."""
        ...

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) for ``samples`` plus detached metrics."""
        ...

    def onload(self) -> None:
        """Brings model weights to the accelerator (a no-op for rule rewards)."""
        ...

    def offload(self) -> None:
        """Moves model weights off the accelerator (a no-op for rule rewards)."""
        ...

    def close(self) -> None:
        """Releases workers, connections and files (a no-op when there are none)."""
        ...


@runtime_checkable
class TrainableRewardModel(Protocol):
    """A scalar reward model being trained on preferences (``lightrft rm train``)."""

    @property
    def module(self) -> nn.Module:
        """The ``nn.Module`` the training strategy wraps."""
        ...

    def pair_scores(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        multimodal: Sequence[Payload] = (),
    ) -> Tensor:
        """Raw scores (B,) float32 of ``prompt + response``; autograd follows the caller.
        ``multimodal``: one media payload per pair (``()``: text only)."""
        ...

    @property
    def head_names(self) -> tuple[str, ...]:
        """The names of the score heads (one per aspect; one head for a plain model)."""
        ...

    def pair_head_scores(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        multimodal: Sequence[Payload] = (),
    ) -> Tensor:
        """Each head's raw score (B, K) float32 (K = ``len(head_names)``; ``pair_scores`` is
        their combination); autograd follows the caller."""
        ...

    def combined(self, head_scores: Tensor) -> Tensor:
        """The heads' scores (B, K) combined into one score (B,), as ``pair_scores`` does."""
        ...


@runtime_checkable
class TrainableProcessRewardModel(Protocol):
    """A process reward model being trained on step labels (``rm train --kind process``)."""

    @property
    def module(self) -> nn.Module:
        """The ``nn.Module`` the training strategy wraps."""
        ...

    def example_logits(self, examples: Sequence[StepLabelledExample]) -> tuple[Tensor, Tensor]:
        """Logits (N,) of the positive and the negative label token at every step end of
        ``examples``, in order; autograd follows the caller."""
        ...


@runtime_checkable
class Collective(Protocol):
    """Data-parallel facts and the one collective the services need."""

    @property
    def rank(self) -> int:
        """This process's data-parallel rank."""
        ...

    @property
    def world_size(self) -> int:
        """Number of data-parallel ranks."""
        ...

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        """Element-wise sum over ranks (a new tensor; the input is not modified)."""
        ...


@runtime_checkable
class Strategy(Protocol):
    """Training backend for one model: wrapping, backward, optimizer step, state."""

    def prepare(self, module: nn.Module) -> None:
        """Shards/wraps ``module`` in place and builds its optimizer and LR schedule."""
        ...

    def backward(self, loss: Tensor) -> None:
        """Accumulates gradients of ``loss`` (a micro-batch's share of the batch loss)."""
        ...

    def step(self, *, skip_reason: str | None = None) -> StepResult:
        """Clips gradients, steps, zeroes gradients.

        Skips the update (gradients are still zeroed) when the gradient norm is not finite,
        or when the caller gives a ``skip_reason`` (e.g. a non-finite loss was not
        back-propagated); the result says so.
        """
        ...

    def set_lr_scale(self, scale: float) -> None:
        """Multiplies the scheduled learning rate of every later step by ``scale`` (> 0;
        1.0 is the schedule as configured). The scale is part of :meth:`state_dict`."""
        ...

    def full_state(self) -> Iterator[tuple[str, Tensor]]:
        """The full (unsharded) parameters, one tensor at a time, for sync and export."""
        ...

    def export_full_state_dict(self) -> dict[str, Tensor]:
        """The full module state in host memory on rank 0 (``{}`` on other ranks), for an
        HF export. Collective on sharded strategies: every rank must call it."""
        ...

    def offload(self) -> None:
        """Moves parameters and optimizer state to host memory (colocation)."""
        ...

    def onload(self) -> None:
        """Brings parameters and optimizer state back to the accelerator."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Optimizer, scheduler and module state for checkpoints: a snapshot that later
        training does not change, holding only what ``torch.load(weights_only=True)`` reads."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores what ``state_dict`` returned."""
        ...


@runtime_checkable
class Accelerator(Protocol):
    """Device facts; the only place that knows about cuda / npu / cpu."""

    @property
    def device_type(self) -> str:
        """``"cuda"``, ``"npu"`` or ``"cpu"``."""
        ...

    @property
    def collective_backend(self) -> str:
        """``"nccl"``, ``"hccl"`` or ``"gloo"``."""
        ...

    def synchronize(self) -> None:
        """Waits for queued device work (for honest timings)."""
        ...

    def empty_cache(self) -> None:
        """Returns cached device memory to the driver."""
        ...

    def memory_stats(self) -> MemoryStats:
        """Current and peak device memory."""
        ...


@runtime_checkable
class Tracker(Protocol):
    """Sink for metrics and sample trajectories."""

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Records scalar metrics of ``step``."""
        ...

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """Records example trajectories (prompt, response, reward, advantage ...)."""
        ...

    def close(self) -> None:
        """Flushes and releases resources."""
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    """Atomic persistence of run state: a crash never leaves a half-written latest."""

    def save(self, step: int, state: Mapping[str, Any]) -> None:
        """Writes ``state`` for ``step`` atomically, then prunes old checkpoints."""
        ...

    def steps(self) -> list[int]:
        """Steps of all complete checkpoints, ascending."""
        ...

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or ``None``."""
        ...

    def load(self, step: int) -> dict[str, Any]:
        """The state saved for ``step``."""
        ...


@runtime_checkable
class PromptSource(Protocol):
    """Random access to prompt records, so the data position is a plain index."""

    def __len__(self) -> int:
        """Number of prompts."""
        ...

    def __getitem__(self, index: int) -> PromptRecord:
        """Prompt number ``index``."""
        ...


@runtime_checkable
class AnswerGrader(Protocol):
    """Extracts the final answer of a response and judges it against a reference."""

    def grade(self, response: str, reference: str | None) -> GradedAnswer:
        """The answer's key (``None``: no answer found) and whether it equals ``reference``
        (``None`` when there is no reference)."""
        ...


@runtime_checkable
class CodeSandbox(Protocol):
    """Runs a program the product did not write (a model's code) behind a boundary."""

    @property
    def backend(self) -> str:
        """Which boundary runs the programs (e.g. ``bwrap``), for logs and metrics."""
        ...

    def run(
        self, program: str, stdin: str = "", limits: SandboxLimits | None = None
    ) -> SandboxResult:
        """Runs Python source ``program`` with ``stdin`` as its standard input under
        ``limits`` (``None``: the defaults of :class:`SandboxLimits`)."""
        ...
