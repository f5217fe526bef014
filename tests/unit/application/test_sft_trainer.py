"""SftTrainer on a tiny random Llama (HfPolicy, SingleDeviceStrategy): loss, masking,
packing, LoRA, exact resume, memorization."""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.sft_rows import build_sft_examples
from lightrft.adapters.fakes.checkpoint_store import InMemoryCheckpointStore
from lightrft.adapters.fakes.tracker import InMemoryTracker
from lightrft.adapters.hf import HfPolicy, LoraParams
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.sft_trainer import SftParams, SftTrainer
from lightrft.domain.sft import SftExample
from lightrft.domain.types import OptimizerParams
from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
ROWS = [
    {"prompt": "2+3", "completion": "5"},
    {"prompt": "7-4", "completion": "3"},
    {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "name?"},
            {"role": "assistant", "content": "Bo"},
        ]
    },
    {"prompt": "capital of France", "completion": "Paris"},
]


def examples() -> list[SftExample]:
    refs = [RowRef(f"r{i}", f"rows row {i}", row) for i, row in enumerate(ROWS)]
    return list(build_sft_examples(refs, tiny_tokenizer()))


def trainer(policy: HfPolicy, lr: float = 1e-3, **params: object) -> SftTrainer:
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=lr, max_grad_norm=None))
    strategy.prepare(policy.module)
    settings = {"batch_size": 4, "micro_batch_size": 2, "epochs": 1000, **params}
    return SftTrainer(
        policy=policy,
        strategy=strategy,
        train_data=examples(),
        params=SftParams(**settings),  # type: ignore[arg-type]
        tracker=InMemoryTracker(),
        checkpoints=InMemoryCheckpointStore(),
    )


def direct_loss(model: torch.nn.Module, data: list[SftExample]) -> float:
    """Token mean of -log p over trained tokens, each example alone and unpadded (float64)."""
    total, count = 0.0, 0
    for e in data:
        ids = torch.tensor([list(e.prompt_ids) + list(e.response_ids)])
        with torch.no_grad():
            logits = model(ids).logits[0].double()
        logp = torch.log_softmax(logits, -1)[len(e.prompt_ids) - 1 : -1]  # predicts response
        chosen = logp.gather(-1, torch.tensor(e.response_ids)[:, None]).squeeze(-1)
        mask = torch.tensor(e.loss_mask, dtype=torch.float64)
        total += float(-(chosen * mask).sum())
        count += int(mask.sum())
    return total / count


def test_loss_equals_direct_masked_computation() -> None:
    policy = HfPolicy(tiny_model(0))
    t = trainer(policy)
    expected = direct_loss(policy.module, [t.train_data[i] for i in t.step_indices(0)])
    metrics = t.train_step()  # the loss is measured before the update
    assert abs(metrics["train/loss"] - expected) < 1e-5


def test_prompt_tokens_get_no_gradient_signal() -> None:
    """Changing the model's prediction at a context token leaves the loss unchanged: the
    gradient of the loss w.r.t. the logits is zero at every untrained position."""
    e = examples()[2]  # chat: "hi" prompt, trained "hello\n", untrained second user turn
    assert 0 in e.loss_mask and 1 in e.loss_mask
    model = tiny_model(0)
    ids = torch.tensor([list(e.prompt_ids) + list(e.response_ids)])
    logits = model(ids).logits.detach().requires_grad_(True)
    policy = HfPolicy(model)
    from lightrft.domain.sft import masked_nll_sum, sft_batch

    batch = sft_batch([e])
    # the policy's log-probs for the response equal log_softmax(logits) at predictor columns
    p = len(e.prompt_ids)
    logp = torch.log_softmax(logits[0], -1)[p - 1 : -1]
    chosen = logp.gather(-1, torch.tensor(e.response_ids)[:, None]).squeeze(-1)[None]
    masked_nll_sum(chosen, batch.response_mask).backward()
    grad = logits.grad[0].abs().sum(-1)  # [T]
    trained_columns = {p - 1 + i for i, m in enumerate(e.loss_mask) if m}
    for column in range(ids.shape[1]):
        assert (grad[column] > 0) == (column in trained_columns), column
    with torch.no_grad():
        out = policy.forward(batch).logprobs
    # the policy scores exactly the trained tokens (0 elsewhere), with the same values
    expected = torch.where(batch.response_mask[0].bool(), chosen[0].detach(), 0.0)
    assert torch.allclose(out[0], expected, atol=1e-5)


def test_packed_micro_batches_equal_padded() -> None:
    padded = trainer(HfPolicy(tiny_model(0)), micro_batch_size=1)
    packed = trainer(HfPolicy(tiny_model(0), packing=True), max_tokens_per_micro_batch=200)
    assert len(packed._micro_batches(examples())) == 1  # all rows in one packed row
    a, b = padded.train_step(), packed.train_step()
    assert abs(a["train/loss"] - b["train/loss"]) < 1e-5
    assert abs(a["train/grad_norm"] - b["train/grad_norm"]) < 1e-4
    for (name, x), (_, y) in zip(
        padded.policy.module.named_parameters(),
        packed.policy.module.named_parameters(),
        strict=True,
    ):
        assert torch.allclose(x, y, atol=1e-6), name


def test_lora_sft_changes_only_adapter_weights() -> None:
    policy = HfPolicy(tiny_model(0), lora=LoraParams(rank=4, alpha=8))
    before = {n: p.detach().clone() for n, p in policy.module.named_parameters()}
    t = trainer(policy, lr=1e-2)
    for _ in range(3):
        t.train_step()
    changed = {n for n, p in policy.module.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all(".lora_" in n for n in changed)
    assert any(".lora_A." in n for n in changed) and any(".lora_B." in n for n in changed)


def test_resume_is_exact() -> None:
    straight = trainer(HfPolicy(tiny_model(0)), batch_size=2, micro_batch_size=1)
    straight.run(resume=False, max_steps=4)
    first = trainer(HfPolicy(tiny_model(0)), batch_size=2, micro_batch_size=1)
    first.run(resume=False, max_steps=2)
    first.save_checkpoint()
    second = trainer(HfPolicy(tiny_model(0)), batch_size=2, micro_batch_size=1)
    second.checkpoints = first.checkpoints
    second.run(resume=True, max_steps=2)
    assert second.step == 4
    for (name, x), (_, y) in zip(
        straight.policy.module.named_parameters(),
        second.policy.module.named_parameters(),
        strict=True,
    ):
        assert torch.equal(x, y), name
    assert straight.history[-1]["train/loss"] == second.history[-1]["train/loss"]


def test_tiny_model_memorizes_a_small_set() -> None:
    t = trainer(HfPolicy(tiny_model(0)), lr=2e-2, total_steps=30, eval_every=30, micro_batch_size=4)
    t.eval_data = t.train_data
    history = t.run(resume=False)
    assert history[0]["train/loss"] > 2.0
    assert history[-1]["eval/loss"] < 0.05
    assert t.tracker.last("eval/loss") == history[-1]["eval/loss"]  # type: ignore[union-attr]


def test_fsdp2_strategy_on_one_rank_matches_single_device(one_rank_group: None) -> None:
    """The trainer drives a sharded strategy through the same port (one gloo rank)."""
    from lightrft.adapters.fsdp import Fsdp2Strategy

    single = trainer(HfPolicy(tiny_model(0)), lr=1e-2, micro_batch_size=1)
    policy = HfPolicy(tiny_model(0))
    strategy = Fsdp2Strategy(OptimizerParams(lr=1e-2, max_grad_norm=None), device=CPU)
    strategy.prepare(policy.module)
    sharded = SftTrainer(
        policy=policy,
        strategy=strategy,
        train_data=examples(),
        params=SftParams(batch_size=4, micro_batch_size=1, epochs=1000),
    )
    for _ in range(2):
        a, b = single.train_step(), sharded.train_step()
        assert abs(a["train/loss"] - b["train/loss"]) < 1e-5
    full = dict(strategy.full_state())
    for name, value in single.policy.module.state_dict().items():
        assert torch.allclose(full[name], value, atol=1e-5), name


def test_ranks_agree_on_the_micro_batch_count() -> None:
    """With a token budget every rank runs as many micro-batches as the busiest one; the
    extra ones carry no loss."""

    class TwoRanks:  # rank 0 of 2; the other rank needs 3 micro-batches
        rank, world_size = 0, 2

        def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
            other = torch.zeros_like(tensor)
            if tensor.numel() == 2:  # the micro-batch count slots
                other[1] = 3
            return tensor + other

    alone = trainer(HfPolicy(tiny_model(0)), max_tokens_per_micro_batch=10_000)
    t = trainer(HfPolicy(tiny_model(0)), max_tokens_per_micro_batch=10_000)
    t.collective = TwoRanks()
    parts = t._micro_batches(examples())
    assert len(parts) == 3
    assert [e.uid for p in parts for e in p] == [e.uid for e in examples()]
    # same rows and loss as alone; the padding micro-batches add no gradient: the only
    # difference is the x world_size (2) that undoes a sharded strategy's rank average,
    # which this single-device strategy does not do, so the gradient norm doubles
    t.global_batch = alone.global_batch
    a, b = alone.train_step(), t.train_step()
    assert abs(a["train/loss"] - b["train/loss"]) < 1e-6
    assert b["train/grad_norm"] == pytest.approx(2 * a["train/grad_norm"], rel=1e-4)
