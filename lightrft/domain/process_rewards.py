"""Process rewards: a response split into reasoning steps, one score per step.

A process reward model (PRM) scores every step of a response at the step's last token
(docs/reward-models.md, "Process reward models"). This module holds the pure parts:

- :func:`split_steps`: the steps of a response text, cut after each occurrence of a
  separator string (``"\\n\\n"``, or a tag such as ``"<step>"`` or Math-Shepherd's ``"ки"``);
- :data:`STEP_AGGREGATIONS`: step scores -> one outcome reward (``min``, ``last``,
  ``product``, ``mean``);
- :func:`step_classification_loss`: the PRM's training loss at each step end;
- the ``process_grpo`` advantage estimator: per-step returns of group-normalised step
  rewards plus the group-normalised outcome reward (ALGORITHMS-style entry in
  docs/algorithms.md).

Shapes: B samples, R response tokens, K steps of one response, N steps of a batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from lightrft.domain import algorithm_registries
from lightrft.domain.advantages import (
    AdvantageInputs,
    AdvantageOutput,
    AdvantageParams,
    _discounted_sum,
    _group_scores,
    _output,
    _per_token,
    _require,
    register_advantage_estimator,
)
from lightrft.domain.groups import group_stats
from lightrft.domain.modality import Payload
from lightrft.domain.reduce import AllReduceSum
from lightrft.domain.registry import Registry


@dataclass(frozen=True)
class StepSpan:
    """One step of a response: ``text[start:end]``, the separator that closes it included."""

    start: int
    end: int


def split_steps(text: str, separator: str) -> list[StepSpan]:
    """The steps of ``text``: each ends right after an occurrence of ``separator`` (which
    belongs to the step it closes); text after the last separator is a last step unless it is
    only whitespace. A text without a separator is one step; an empty text has none.
    """
    if not separator:
        raise ValueError("the step separator must be a non-empty string")
    spans: list[StepSpan] = []
    start = 0
    while True:
        found = text.find(separator, start)
        if found < 0:
            break
        end = found + len(separator)
        spans.append(StepSpan(start, end))
        start = end
    if text[start:].strip():
        spans.append(StepSpan(start, len(text)))
    return spans


@dataclass(frozen=True)
class StepLabelledExample:
    """A step-labelled solution, the row of a process reward model: a prompt, the response's
    steps (each closed by the separator when encoded) and one label per step (same order).

    ``label_range``: where the labels lie. The default, [0, 1], is a PRM training row's: the
    probability that the step is good (1: ``+``, 0: ``-``; soft labels in between). ``None``:
    any finite number, as a data set gives it (the reward-set loader keeps PRM800K's -1 / 0 /
    +1 ratings so). ``multimodal``: the prompt's media payload, if any. ``uid``: the row's
    name (``file:row``), empty when the row has none."""

    prompt: str
    steps: tuple[str, ...]
    labels: tuple[float, ...]
    multimodal: Payload | None = None
    uid: str = ""
    label_range: tuple[float, float] | None = (0.0, 1.0)

    def __post_init__(self) -> None:
        named = f"{self.uid}: " if self.uid else ""
        if not self.steps:
            raise ValueError(f"{named}a step-labelled example needs at least one step")
        if len(self.steps) != len(self.labels):
            raise ValueError(f"{named}{len(self.steps)} steps but {len(self.labels)} labels")
        if self.label_range is None:
            bad = [x for x in self.labels if not math.isfinite(x)]
            if bad:
                raise ValueError(f"{named}step labels must be finite numbers, got {bad}")
        else:
            low, high = self.label_range
            for label in self.labels:
                if not low <= label <= high:
                    raise ValueError(
                        f"{named}step labels must lie in [{low:g}, {high:g}], got {label}"
                    )


def step_probabilities(positive_logits: Tensor, negative_logits: Tensor) -> Tensor:
    """A step's score: p(good) = softmax over the two label tokens, read at the step's last
    token, = sigmoid(l_+ - l_-). Shape: (N,), (N,) -> (N,) float32."""
    return torch.sigmoid(positive_logits.float() - negative_logits.float())


def step_classification_loss(
    positive_logits: Tensor, negative_logits: Tensor, labels: Tensor
) -> Tensor:
    """Cross-entropy of the label at each step end restricted to the two label tokens:
    -y log p - (1 - y) log (1 - p), p = sigmoid(l_+ - l_-). Shapes (N,) -> (N,)."""
    gap = positive_logits.float() - negative_logits.float()
    return F.binary_cross_entropy_with_logits(gap, labels.to(gap.dtype), reduction="none")


# -- aggregation ---------------------------------------------------------------------------

Aggregation = Callable[[Tensor], Tensor]
STEP_AGGREGATIONS: Registry[Aggregation] = algorithm_registries.STEP_AGGREGATIONS
STEP_AGGREGATIONS.add("min", lambda s: s.min())
STEP_AGGREGATIONS.add("last", lambda s: s[-1])
STEP_AGGREGATIONS.add("product", lambda s: s.prod())
STEP_AGGREGATIONS.add("mean", lambda s: s.mean())


def aggregate_steps(scores: Sequence[Tensor], how: str, empty_score: float = 0.0) -> Tensor:
    """One reward per response (B,) from its step scores (each (K,)) by ``how`` (a
    :data:`STEP_AGGREGATIONS` name); a response without steps gets ``empty_score``."""
    aggregate = STEP_AGGREGATIONS.get(how)
    return torch.tensor(
        [float(aggregate(s.double())) if s.numel() else empty_score for s in scores],
        dtype=torch.float32,
    )


# -- per-step credit -----------------------------------------------------------------------


def _process_grpo(
    inputs: AdvantageInputs, params: AdvantageParams, _r: AllReduceSum
) -> AdvantageOutput:
    """A_t = w * sum_{steps k ending at or after t} (s_k - mean_g s) / (std_g s + eps)
    + (r - mean_g r) / (std_g r + eps),  w = ``params.process_weight``.

    The step rewards s (``inputs.step_rewards`` at ``inputs.step_mask``) are normalised with
    the mean and Bessel std of all step rewards of the sample's group g (DeepSeekMath,
    arXiv:2402.03300, sec. 4.1.3, GRPO with process supervision); each token then gets the
    sum of the normalised rewards of its own step and the later ones (the per-step return,
    gamma = 1). The outcome reward r (``inputs.rewards``: the other sources) adds its ``grpo``
    advantage on every token, as PRIME (arXiv:2502.01456, sec. 3) adds the outcome advantage
    to the process returns; w < 1 weighs a noisy PRM's credit below the verified outcome's
    (PRIME, too, scales its process and outcome rewards by separate coefficients). Groups
    whose step rewards (outcome rewards) are all equal, or of one sample, contribute 0 for
    that part. Shape: (B, R).
    """
    mask = inputs.response_mask.bool()
    step_rewards = _require("process_grpo", "step_rewards", inputs.step_rewards)
    at_end = _require("process_grpo", "step_mask", inputs.step_mask).bool()
    if bool((at_end & ~mask).any()):
        raise ValueError("step_mask marks a token outside response_mask")
    rows = torch.arange(mask.shape[0]).unsqueeze(-1).expand_as(mask)[at_end]  # (N,)
    values = step_rewards.double()[at_end]  # (N,)
    normalised = torch.zeros_like(step_rewards, dtype=torch.float64)
    if values.numel():
        stats = group_stats(values, inputs.group_index[rows])
        scaled = (values - stats.mean) / (stats.std + params.eps)
        normalised[at_end] = torch.where(stats.std > 0, scaled, 0.0)
    process = _discounted_sum(normalised, mask, 1.0)
    outcome, _, metrics = _group_scores(
        AdvantageInputs(inputs.rewards, inputs.response_mask, inputs.group_index),
        lambda r, g: (r - g.mean) / (g.std + params.eps),
    )
    advantages = params.process_weight * process + _per_token(outcome.double(), mask)
    metrics = {
        **metrics,
        "process/steps_per_sample": at_end.sum(dim=-1).double().mean(),
        "process/step_reward_mean": values.mean() if values.numel() else values.new_zeros(()),
    }
    dtype = step_rewards.dtype if step_rewards.is_floating_point() else torch.float32
    return _output(advantages.to(dtype), advantages.to(dtype), mask, metrics)


register_advantage_estimator("process_grpo", needs_step_rewards=True)(_process_grpo)
