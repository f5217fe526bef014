"""HfRolloutEngine(compile_decode=True): decode steps through torch.compile, same samples."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
PROMPT_IDS = [[5, 9, 12, 40], [7, 8], [100, 3, 44, 45, 46, 47]]
PROMPTS = [PromptRecord(f"p{i}", "", tuple(ids)) for i, ids in enumerate(PROMPT_IDS)]
# stop on a third of the vocabulary: rows stop at different steps and leave the batch, so
# the compiled step also sees a shrinking batch
SAMPLING = SamplingParams(n=3, max_new_tokens=10, seed=3, stop_token_ids=tuple(range(3, 259, 3)))


def same(a: list[Completion], b: list[Completion]) -> None:
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    for x, y in zip(a, b, strict=True):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-5)


def test_compiled_decode_gives_the_eager_samples_and_follows_new_weights() -> None:
    torch._dynamo.reset()
    compiled = HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU, compile_decode=True)
    eager = HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU)
    first = compiled.generate(PROMPTS, SAMPLING)
    assert isinstance(compiled._compiled, torch._dynamo.eval_frame.OptimizedModule)
    same(first, eager.generate(PROMPTS, SAMPLING))
    assert len({len(c.token_ids) for c in first}) > 1  # rows did stop at different steps
    for eng in (compiled, eager):  # in-place weight update: the compiled step must see it
        eng.load_weights(tiny_model(1).named_parameters())
    second = compiled.generate(PROMPTS, SAMPLING)
    same(second, eager.generate(PROMPTS, SAMPLING))
    assert [c.token_ids for c in second] != [c.token_ids for c in first]
