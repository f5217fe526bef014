"""The trajectory rows a cycle logs for each step (``Tracker.log_samples``).

One row per logged sample (the first ``log_samples_per_step`` samples of the step, whole
groups first): prompt and response text, the shaped reward and the score of every reward
source, the advantage (of the first token, and per token), the response length and finish
reason, the token ids, and per-token log-probs and entropies of the policy that sampled
(a no-grad forward before the update) plus the engine's own log-probs when it reports them
(their difference is the rollout/training mismatch). Floats are rounded to 4 decimals so
sample files stay small; per-token lists hold at most R (max_new_tokens) entries. A
multi-turn sample also carries its per-token ``loss_mask`` and its turns (see
:func:`_episode_fields`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from lightrft.application.stages.records import ExperienceBatch
from lightrft.domain.ports import Collective, Policy, Tracker
from lightrft.domain.trajectory import Episode

DIGITS = 4


@dataclass(frozen=True)
class TokenTraces:
    """Per-token values of the logged rows under the sampling policy. Shapes (N, R)."""

    logprobs: Tensor
    entropy: Tensor | None


def token_traces(
    policy: Policy, batch: ExperienceBatch, rows: int, temperature: float = 1.0
) -> TokenTraces | None:
    """Log-probs and entropies of the first ``rows`` samples (no grad) at the sampling
    ``temperature`` (the engine's log-probs are at that temperature); None for 0 rows."""
    if rows == 0:
        return None
    seq = batch.experience.sequences.select(torch.arange(rows))
    with torch.no_grad():
        out = policy.forward(seq, temperature=temperature, with_entropy=True)
    entropy = None if out.entropy is None else out.entropy.float().cpu()
    return TokenTraces(out.logprobs.float().cpu(), entropy)


def sample_rows(
    batch: ExperienceBatch, rows: int, traces: TokenTraces | None = None
) -> list[dict[str, Any]]:
    """The first ``rows`` samples of ``batch`` as JSON-ready rows (see the module doc)."""
    exp = batch.experience
    out: list[dict[str, Any]] = []
    for i in range(rows):
        completion = batch.completions[i]
        prompt = batch.prompts[completion.prompt_index]
        n = len(completion.token_ids)
        row: dict[str, Any] = {
            "uid": prompt.uid,
            "prompt": prompt.prompt_text,
            "response": completion.text,
            "reward": _round(exp.rewards[i]),
            "rewards": {name: _round(s[i]) for name, s in batch.reward_by_source.items()},
            "advantage": _round(exp.advantages[i, 0]),
            "length": n,
            "finish_reason": completion.finish_reason,
            "group": int(exp.group_index[i]),
            "token_ids": list(completion.token_ids),
            "advantages": _per_token(exp.advantages[i], n),
        }
        if traces is not None:
            row["logprobs"] = _per_token(traces.logprobs[i], n)
            if traces.entropy is not None:
                row["entropy"] = _per_token(traces.entropy[i], n)
        if exp.rollout_logprobs is not None:
            row["rollout_logprobs"] = _per_token(exp.rollout_logprobs[i], n)
        if completion.episode is not None:
            row.update(_episode_fields(completion.episode))
        out.append(row)
    return out


def _episode_fields(episode: Episode) -> dict[str, Any]:
    """A multi-turn sample: its per-token ``loss_mask`` (1: generated and trained, 0: an
    observation) and its turns (text, whether trained, token count), rewards and counters."""
    return {
        "loss_mask": list(episode.loss_mask),
        "turns": [
            {"text": s.text, "trained": s.trained, "tokens": len(s.token_ids)}
            for s in episode.segments
        ],
        "turn_rewards": [round(r, DIGITS) for r in episode.turn_rewards],
        "end_reason": episode.end_reason,
        "counters": {k: round(v, DIGITS) for k, v in episode.counters.items()},
    }


def _round(value: Tensor | float) -> float:
    return round(float(value), DIGITS)


def _per_token(values: Tensor, n: int) -> list[float]:
    return [round(v, DIGITS) for v in values[:n].tolist()]


class SampleLog:
    """The cycle's sample logging: the first ``rows_per_step`` samples of each step, their
    token traces taken under the sampling policy (every rank runs that forward: a sharded
    policy needs all ranks; rank 0 logs), with the policy version each sample came from when
    ``tag_versions`` (off-policy runs)."""

    def __init__(
        self,
        policy: Policy,
        tracker: Tracker,
        collective: Collective,
        rows_per_step: int,
        temperature: float,
        *,
        tag_versions: bool,
    ) -> None:
        self.policy, self.tracker, self.collective = policy, tracker, collective
        self.rows_per_step, self.temperature = rows_per_step, temperature
        self.tag_versions = tag_versions

    def rows(self, batch: ExperienceBatch) -> int:
        """How many samples of ``batch`` are logged."""
        return min(self.rows_per_step, len(batch.completions))

    def traces(self, batch: ExperienceBatch) -> TokenTraces | None:
        """The logged rows' token traces (before the update)."""
        return token_traces(self.policy, batch, self.rows(batch), self.temperature)

    def log(
        self, batch: ExperienceBatch, step: int, traces: TokenTraces | None, version: int
    ) -> None:
        """Logs the rows of ``batch`` as ``step`` (rank 0)."""
        rows = self.rows(batch)
        if rows and self.collective.rank == 0:
            samples = sample_rows(batch, rows, traces)
            if self.tag_versions:  # the version each sample came from
                samples = [{**row, "policy_version": version} for row in samples]
            self.tracker.log_samples(samples, step)
