"""HfRolloutEngine batch work: one prefill per distinct prompt, finished rows leave the batch.

Both change only how much is computed, never what is sampled: every completion must still
carry the policy's log-probs of its tokens and equal the completion drawn on its own.
"""

from __future__ import annotations

import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
PROMPT_IDS = [[5, 9, 12, 40], [7, 8], [100, 3, 44, 45, 46, 47]]
PROMPTS = [PromptRecord(f"p{i}", "", tuple(ids)) for i, ids in enumerate(PROMPT_IDS)]


def spied_engine(**kwargs: object) -> tuple[HfRolloutEngine, list[tuple[int, int]]]:
    """An engine whose model calls are recorded as (rows, new tokens) per call."""
    eng = HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU, **kwargs)
    calls: list[tuple[int, int]] = []
    original = eng._step

    def step(input_ids: torch.Tensor, *args: object) -> torch.Tensor:
        calls.append((input_ids.shape[0], input_ids.shape[1]))
        return original(input_ids, *args)  # type: ignore[arg-type]

    eng._step = step  # type: ignore[method-assign]
    return eng, calls


def assert_policy_logprobs(out: list[Completion], prompt_ids: list[list[int]]) -> None:
    batch = make_batch([prompt_ids[c.prompt_index] for c in out], [c.token_ids for c in out])
    with torch.no_grad():
        expected = HfPolicy(tiny_model(0)).forward(batch).logprobs
    for row, c in enumerate(out):
        got = torch.tensor(c.logprobs)
        torch.testing.assert_close(got, expected[row, : len(got)], atol=1e-5, rtol=1e-5)


def test_each_distinct_prompt_is_prefilled_once() -> None:
    eng, calls = spied_engine()
    # prompt 0 twice (different uids, same tokens): 3 distinct token sequences of 4 prompts
    prompts = [*PROMPTS, PromptRecord("again", "", tuple(PROMPT_IDS[0]))]
    out = eng.generate(prompts, SamplingParams(n=4, max_new_tokens=5, seed=1))
    assert calls[0] == (3, max(len(p) for p in PROMPT_IDS))  # prefill: 3 rows, not 16
    assert calls[1] == (16, 1)  # then every sample decodes its own token
    assert_policy_logprobs(out, [*PROMPT_IDS, PROMPT_IDS[0]])
    # same uid -> same streams: the duplicated prompt's samples differ only by their seeds
    assert len({c.token_ids for c in out}) > 4


def test_prefill_sharing_follows_the_batch_chunks() -> None:
    eng, calls = spied_engine(max_batch_size=4)
    out = eng.generate(PROMPTS[:2], SamplingParams(n=3, max_new_tokens=3, seed=2))
    # rows p0 p0 p0 p1 | p1 p1: the first chunk prefills 2 prompts, the second 1
    prefills = [rows for rows, tokens in calls if tokens > 1]
    assert prefills == [2, 1]
    assert_policy_logprobs(out, PROMPT_IDS)


def test_finished_rows_leave_the_batch_without_changing_any_completion() -> None:
    # Stop on half of the vocabulary: rows stop at different steps.
    stop_ids = tuple(range(3, 259, 2))
    sampling = SamplingParams(n=4, max_new_tokens=12, seed=5, stop_token_ids=stop_ids)
    eng, calls = spied_engine()
    out = eng.generate(PROMPTS, sampling)
    decode_rows = [rows for rows, tokens in calls if tokens == 1]
    assert decode_rows == sorted(decode_rows, reverse=True)
    assert decode_rows[0] <= 12
    assert decode_rows[-1] < 12  # finished rows were dropped
    lengths = sorted(len(c.token_ids) for c in out)
    assert lengths[0] < lengths[-1]  # rows did stop at different steps
    assert_policy_logprobs(out, PROMPT_IDS)
    for i, prompt in enumerate(PROMPTS):  # each prompt drawn alone: same completions
        alone = HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU).generate([prompt], sampling)
        assert [c.token_ids for c in alone] == [c.token_ids for c in out[4 * i : 4 * i + 4]]
        assert [c.finish_reason for c in alone] == [c.finish_reason for c in out[4 * i : 4 * i + 4]]
