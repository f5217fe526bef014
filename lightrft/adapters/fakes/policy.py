"""``FakePolicy``: the ``Policy`` port on a real tiny GRU language model (CPU friendly).

Shape letters: B samples, T sequence tokens, R response tokens, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterator

from torch import Tensor

from lightrft.adapters.fakes.fake_model import SeededTinyModel
from lightrft.adapters.fakes.response_logprobs import response_logprobs
from lightrft.adapters.fakes.tiny_lm import TinyGruLm
from lightrft.domain.ports import NamedTensors, PolicyOutput
from lightrft.domain.types import SequenceBatch


class FakePolicy(SeededTinyModel):
    """A trainable :class:`TinyGruLm` whose weights depend only on ``seed``.

    ``forward`` computes honest log-probs (autograd on under grad mode); records
    ``forward_calls``, ``forward_rows`` (samples over all forwards) and ``syncs_prepared``
    (calls of ``weights_for_sync``).
    """

    architecture = TinyGruLm
    forward_calls = 0
    forward_rows = 0
    syncs_prepared = 0

    def forward(
        self, batch: SequenceBatch, *, temperature: float = 1.0, with_entropy: bool = False
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens (and entropy (B, R)); 0 on padding."""
        self.forward_calls += 1
        self.forward_rows += len(batch.input_ids)
        return response_logprobs(
            self._module, batch, self.device, temperature=temperature, with_entropy=with_entropy
        )

    def weights_for_sync(self, full_state: NamedTensors) -> Iterator[tuple[str, Tensor]]:
        """The gathered parameters unchanged (no LoRA to merge): names as ``named_parameters``."""
        self.syncs_prepared += 1
        yield from full_state
