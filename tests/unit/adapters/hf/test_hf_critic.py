from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from lightrft.adapters.hf.critic import HfCritic
from lightrft.domain.ports import Critic
from lightrft.domain.types import SequenceBatch


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=32,
    )
    return LlamaForCausalLM(config)


def test_values_read_the_column_that_predicts_each_token_and_ignore_left_padding() -> None:
    critic = HfCritic(_model())
    assert isinstance(critic, Critic)
    torch.nn.init.normal_(critic.module.value_head.weight)  # zero-init head would hide errors
    # row 0: one pad column, prompt [5, 6], response [7, 8]
    # row 1: one pad column, prompt [5, 6], response [7], then a right pad
    ids = torch.tensor([[5, 6, 7, 8]])
    batch = SequenceBatch(
        input_ids=torch.tensor([[0, 5, 6, 7, 8], [0, 5, 6, 7, 0]]),
        attention_mask=torch.tensor([[0, 1, 1, 1, 1], [0, 1, 1, 1, 0]]),
        response_mask=torch.tensor([[1, 1], [1, 0]]),
    )
    with torch.no_grad():
        values = critic.values(batch)
        # direct computation: hidden state of the unpadded sequence at the predicting column
        hidden = critic.module.backbone(input_ids=ids[:1]).last_hidden_state
        direct = critic.module.value_head(hidden).squeeze(-1)[0]  # columns of [5, 6, 7, 8]
    # V for response token 7 is read at the column of 6, for token 8 at the column of 7
    torch.testing.assert_close(values[0], direct[1:3], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(values[1, 0], direct[1], atol=1e-5, rtol=1e-5)
    assert values[1, 1] == 0  # padding


def test_value_head_trains_towards_returns() -> None:
    critic = HfCritic(_model())
    batch = SequenceBatch(
        torch.tensor([[1, 2, 3, 4]]), torch.ones(1, 4, dtype=torch.long), torch.tensor([[1, 1]])
    )
    optimizer = torch.optim.Adam(critic.module.parameters(), lr=1e-2)
    target = torch.tensor([[0.5, -0.5]])
    first = None
    for _ in range(60):
        loss = ((critic.values(batch) - target) ** 2).mean()
        first = float(loss) if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss) < 0.1 * first


def test_building_the_value_head_does_not_move_the_global_stream() -> None:
    model = _model()
    torch.manual_seed(3)
    untouched = torch.rand(4)
    torch.manual_seed(3)
    critic = HfCritic(model, init_seed=9)
    assert torch.equal(torch.rand(4), untouched)
    head = critic.module.value_head
    assert float(head.weight.abs().sum()) == 0 and float(head.bias.abs().sum()) == 0
