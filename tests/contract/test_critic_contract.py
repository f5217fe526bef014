"""Contract of the ``Critic`` port. Append factories of real critics to ``IMPLEMENTATIONS``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from lightrft.adapters.fakes import FakeCritic, make_sequence_batch
from lightrft.adapters.hf.critic import HfCritic
from lightrft.domain.ports import Critic
from tests.contract.real_adapters import ORDINARY_IDS, randomize, tiny_model


@dataclass
class CriticSubject:
    critic: Critic
    token_ids: tuple[int, ...]  # at least 6 ordinary ids
    atol: float = 1e-5


def make_fake_critic() -> CriticSubject:
    return CriticSubject(FakeCritic(seed=0), token_ids=tuple(range(3, 16)))


def make_hf_critic() -> CriticSubject:
    critic = HfCritic(tiny_model(0))
    # The value head starts at zero (every value 0); a trained critic's head is not.
    randomize(critic.module.get_submodule("value_head"), seed=1)
    return CriticSubject(critic, ORDINARY_IDS)


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_critic, id="fake"),
    pytest.param(make_hf_critic, id="hf"),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> CriticSubject:
    factory: Callable[[], CriticSubject] = request.param
    return factory()


def _values(s: CriticSubject, prompt_padding: int = 0, response_padding: int = 0) -> torch.Tensor:
    t = s.token_ids
    batch = make_sequence_batch(
        [[t[0], t[1]], [t[2], t[3], t[4]]],
        [[t[5]], [t[0], t[1], t[2]]],
        prompt_padding=prompt_padding,
        response_padding=response_padding,
    )
    return s.critic.values(batch)


def test_is_a_critic(subject: CriticSubject) -> None:
    assert isinstance(subject.critic, Critic)
    assert isinstance(subject.critic.module, nn.Module)


def test_values_shape_padding_and_gradients(subject: CriticSubject) -> None:
    values = _values(subject)
    assert values.shape == (2, 3)
    assert torch.isfinite(values).all()
    assert torch.all(values[0, 1:] == 0)
    torch.autograd.backward(values.sum())
    assert any(p.grad is not None for p in subject.critic.module.parameters())
    with torch.no_grad():
        padded = _values(subject, 2, 1)
        tight = _values(subject)
    torch.testing.assert_close(padded[:, :3], tight, atol=subject.atol, rtol=0)
    assert torch.all(padded[:, 3:] == 0)
