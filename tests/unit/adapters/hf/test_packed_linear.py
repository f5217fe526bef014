"""PackedLinears: the model's outputs with oneDNN-packed linear weights equal nn.Linear's up
to float rounding, follow in-place weight changes, and the layers are restored after."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.adapters.hf.packed_linear import PackedLinears, packing_available
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
pytestmark = pytest.mark.skipif(
    not packing_available(tiny_model(), CPU), reason="this PyTorch has no oneDNN packing ops"
)


def _logits(model: torch.nn.Module) -> torch.Tensor:
    ids = torch.arange(3, 27).reshape(3, 8)
    with torch.no_grad():
        return model(ids).logits


@pytest.mark.parametrize("tie", [False, True])
def test_packed_weights_give_the_linear_outputs(tie: bool) -> None:
    model = tiny_model(tie=tie)
    packed = PackedLinears(model)
    plain = _logits(model)
    with packed.active(rows=3):
        assert all("forward" in m.__dict__ for m in model.modules() if type(m) is torch.nn.Linear)
        inside = _logits(model)
    torch.testing.assert_close(inside, plain, atol=1e-5, rtol=1e-5)
    assert not any("forward" in m.__dict__ for m in model.modules())
    assert packed.packs == sum(1 for m in model.modules() if type(m) is torch.nn.Linear)


def test_a_changed_weight_is_packed_again_and_an_unchanged_one_is_not() -> None:
    model = tiny_model()
    packed = PackedLinears(model)
    with packed.active(rows=3):
        _logits(model)
    first = packed.packs
    with packed.active(rows=3):
        _logits(model)
    assert packed.packs == first  # nothing changed: nothing repacked
    with torch.no_grad():
        model.lm_head.weight.mul_(2.0)  # in place, as an optimizer step or a weight load
    with packed.active(rows=3):
        after = _logits(model)
    assert packed.packs == first + 1
    torch.testing.assert_close(after, _logits(model), atol=1e-5, rtol=1e-5)
    packed.release()
    with packed.active(rows=3):
        pass
    assert packed.packs == 2 * first + 1


def test_rows_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rows"), PackedLinears(tiny_model()).active(rows=0):
        pass


def test_engine_samples_alike_with_and_without_packed_weights() -> None:
    prompts = [PromptRecord("a", "", (5, 9, 12, 40)), PromptRecord("b", "", (7, 8))]
    sampling = SamplingParams(n=3, max_new_tokens=12, temperature=1.0, seed=3)
    out = {
        on: HfRolloutEngine(tiny_model(), tiny_tokenizer(), CPU, packed_linears=on).generate(
            prompts, sampling
        )
        for on in (False, True)
    }
    assert [c.token_ids for c in out[True]] == [c.token_ids for c in out[False]]
    for a, b in zip(out[True], out[False], strict=True):
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs))


def test_weights_are_packed_for_at_least_sixteen_rows() -> None:
    from lightrft.adapters.hf.packed_linear import MIN_PACKING_ROWS, packing_rows

    assert MIN_PACKING_ROWS == 16
    assert [packing_rows(r) for r in (1, 15, 16, 64)] == [16, 16, 16, 64]
