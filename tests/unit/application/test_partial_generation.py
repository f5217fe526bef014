"""Partial rollouts: chunked generation that loads newer weights between chunks.

Without a weight load, chunks of a resumable engine give exactly one ``generate``; with one,
every token is tagged with the version that sampled it and its log-prob is that version's
(checked against a separate teacher-forced forward, and by hand with an engine whose
tokens and log-probs are its version)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
import torch

from lightrft.adapters.fakes import FakeRolloutEngine
from lightrft.adapters.fakes.task import synthetic_records
from lightrft.adapters.fakes.tiny_lm import TinyGruLm, seeded
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.partial_generation import (
    CHUNK_SEED_STRIDE,
    ChunkedEngine,
    ContinuationSession,
    NativeSession,
    open_session,
)
from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

SAMPLING = SamplingParams(n=2, temperature=1.0, max_new_tokens=10, seed=11)


def _prompts(count: int = 4) -> list[PromptRecord]:
    return list(synthetic_records(count, seed=3))


def _untagged(completions: Sequence[Completion]) -> list[Completion]:
    return [replace(c, token_versions=None) for c in completions]


@pytest.mark.parametrize("chunk", [1, 3, 7, 100])
def test_chunks_without_new_weights_are_the_unchunked_generation(chunk: int) -> None:
    plain = FakeRolloutEngine(seed=1).generate(_prompts(), SAMPLING)
    chunked = ChunkedEngine(FakeRolloutEngine(seed=1), chunk, refresh=lambda: 0)
    out = chunked.generate(_prompts(), SAMPLING)
    assert _untagged(out) == plain
    assert {r for c in plain for r in [c.finish_reason]} == {"stop", "length"}  # both kinds
    assert all(c.token_versions == (0,) * len(c.token_ids) for c in out)
    assert chunked.weight_loads == 0


def _newer(engine: FakeRolloutEngine) -> list[tuple[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(5)
    return [
        (name, t + 0.3 * torch.randn(t.shape, generator=generator))
        for name, t in engine.named_parameters().items()
    ]


def _teacher_forced_logprobs(
    weights: dict[str, torch.Tensor], prompt: PromptRecord, response: Sequence[int]
) -> torch.Tensor:
    """log softmax(logits) of each response token under ``weights``, by one full forward
    of prompt + response (not the engine's incremental decoding). Shape: (R,)."""
    module = seeded(0, lambda: TinyGruLm(16, 32))
    module.load_state_dict(weights)
    ids = torch.tensor([prompt.prompt_token_ids + tuple(response)])
    with torch.no_grad():
        logits = module(ids, torch.ones_like(ids))[0]  # [P + R, V]
    p = len(prompt.prompt_token_ids)
    logprobs = logits[p - 1 : p - 1 + len(response)].log_softmax(-1)  # [R, V]
    return logprobs.gather(1, torch.tensor(response)[:, None]).squeeze(1)


def test_new_weights_between_chunks_tag_the_tokens_and_give_their_logprobs() -> None:
    engine = FakeRolloutEngine(seed=1)
    old = engine.named_parameters()
    new = _newer(engine)
    loads = iter([0, 1])  # version 0 for chunk 0; version 1 is loaded before chunk 1

    def refresh() -> int:
        version = next(loads, 1)
        if version == 1 and engine.weight_syncs == 0:
            engine.load_weights(new)
        return version

    sampling = replace(SAMPLING, max_new_tokens=8)
    out = ChunkedEngine(engine, 3, refresh).generate(_prompts(), sampling)
    spanning = [c for c in out if len(c.token_ids) > 3]
    assert spanning, "some samples run past the first chunk"
    for c in out:
        head = min(3, len(c.token_ids))
        assert c.token_versions == (0,) * head + (1,) * (len(c.token_ids) - head)
    prompts = _prompts()
    for c in out:
        prompt = prompts[c.prompt_index]
        assert c.logprobs is not None and c.token_versions is not None
        by_old = _teacher_forced_logprobs(old, prompt, c.token_ids)
        by_new = _teacher_forced_logprobs(dict(new), prompt, c.token_ids)
        expected = [
            float(by_new[i] if v == 1 else by_old[i]) for i, v in enumerate(c.token_versions)
        ]
        assert c.logprobs == pytest.approx(expected, abs=1e-5)
    # the first chunk is the unchunked generation's first 3 tokens (same seed, same weights)
    plain = FakeRolloutEngine(seed=1).generate(_prompts(), sampling)
    assert [c.token_ids[:3] for c in out] == [c.token_ids[:3] for c in plain]


STOP = 99


class VersionEngine:
    """Every token it generates is its version v (log-prob -(v + 1) / 10); a row ends with
    the stop token once prompt + response reach 9 tokens. Records each call."""

    def __init__(self) -> None:
        self.version = 0
        self.calls: list[tuple[list[str], list[int], SamplingParams]] = []

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        self.calls.append(
            ([p.uid for p in prompts], [len(p.prompt_token_ids) for p in prompts], sampling)
        )
        out = []
        for i, p in enumerate(prompts):
            for _ in range(sampling.n):
                ids: list[int] = []
                reason: str = "length"
                while len(ids) < sampling.max_new_tokens:
                    if len(p.prompt_token_ids) + len(ids) + 1 >= 9:
                        ids.append(STOP)
                        reason = "stop"
                        break
                    ids.append(self.version)
                logprob = -(self.version + 1) / 10
                text = "".join("." if t == STOP else str(t) for t in ids)
                out.append(Completion(i, tuple(ids), text, reason, (logprob,) * len(ids)))  # type: ignore[arg-type]
        return out

    def load_weights(self, weights: NamedTensors) -> None:
        self.version = int(dict(weights)["v"].item())

    def sleep(self) -> None: ...

    def wake_up(self) -> None: ...

    is_awake = True
    shares_policy_weights = False


def test_an_engine_without_resume_continues_through_generate_by_hand() -> None:
    engine = VersionEngine()
    prompts = [
        PromptRecord("a", "a", (1, 2)),  # 9 - 2 = 7 response tokens, the last one the stop
        PromptRecord("b", "b", (1, 2, 3, 4, 5)),  # 4 response tokens
    ]
    versions = iter(range(10))

    def refresh() -> int:  # a newer version before every chunk
        version = next(versions)
        engine.load_weights([("v", torch.tensor(version))])
        return version

    chunked = ChunkedEngine(engine, 3, refresh)
    assert isinstance(open_session(engine, prompts, SAMPLING), ContinuationSession)
    out = chunked.generate(prompts, replace(SAMPLING, max_new_tokens=8))
    # a: chunk 0 (v0) 0 0 0, chunk 1 (v1) 1 1 1, chunk 2 (v2) the stop at length 2 + 6 + 1
    # b: chunk 0 (v0) 0 0 0, chunk 1 (v1) the stop at 5 + 3 + 1 = 9
    assert [c.token_ids for c in out] == [(0, 0, 0, 1, 1, 1, STOP)] * 2 + [(0, 0, 0, STOP)] * 2
    assert [c.token_versions for c in out] == [(0, 0, 0, 1, 1, 1, 2)] * 2 + [(0, 0, 0, 1)] * 2
    assert [c.logprobs for c in out] == [(-0.1,) * 3 + (-0.2,) * 3 + (-0.3,)] * 2 + [
        (-0.1,) * 3 + (-0.2,)
    ] * 2
    assert [c.finish_reason for c in out] == ["stop"] * 4
    assert [c.text for c in out] == ["000111."] * 2 + ["000."] * 2
    assert [c.prompt_index for c in out] == [0, 0, 1, 1]
    assert chunked.weight_loads == 2
    # chunk 0: the prompts as asked; later chunks: one row per unfinished sample, its own
    # uid (one random stream each), prompt + tokens so far, a seed per chunk, no FIRE
    (uids0, lens0, s0), (uids1, lens1, s1), (uids2, lens2, s2) = engine.calls
    assert (uids0, lens0, s0.n, s0.max_new_tokens, s0.seed) == (["a", "b"], [2, 5], 2, 3, 11)
    assert (uids1, lens1, s1.n, s1.max_new_tokens) == (
        ["a#0", "a#1", "b#0", "b#1"],
        [5, 5, 8, 8],
        1,
        3,
    )
    assert (uids2, lens2, s2.max_new_tokens) == (["a#0", "a#1"], [8, 8], 2)
    assert s1.seed == 11 + CHUNK_SEED_STRIDE and s2.seed == 11 + 2 * CHUNK_SEED_STRIDE
    assert s1.first_token_temperature is None


def test_a_resumable_engine_keeps_the_generation_itself() -> None:
    assert isinstance(open_session(FakeRolloutEngine(), _prompts(), SAMPLING), NativeSession)


@pytest.mark.parametrize(
    ("mode", "placement"), [("one_step_off", "colocated"), ("sync", "split"), ("sync", "colocated")]
)
def test_partial_rollouts_need_a_split_off_policy_run(mode: str, placement: str) -> None:
    with pytest.raises(ValueError, match="rollout.partial_rollouts needs rollout.placement=split"):
        OffPolicyParams(
            mode=mode,  # type: ignore[arg-type]
            max_staleness=0 if mode == "sync" else 1,
            placement=placement,  # type: ignore[arg-type]
            partial_rollouts=True,
        )
