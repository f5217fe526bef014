"""How the rollout engine samples (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass

from lightrft.domain.scalar_checks import check_non_negative, check_positive


@dataclass(frozen=True)
class SamplingParams:
    """How the rollout engine samples. ``top_k=0`` and ``min_p=0`` disable those filters.
    ``ignore_eos``: end-of-sequence tokens do not end a completion (``stop_token_ids`` and
    ``stop_strings`` still do), so every completion runs to ``max_new_tokens`` unless one of
    those stops it (fixed-length workloads for benchmarks; vLLM's option of that name)."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    max_new_tokens: int = 256
    stop_strings: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    first_token_temperature: float | None = None  # FIRE (arXiv:2410.21236); None: off
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        check_positive("n", self.n)
        check_non_negative("temperature", self.temperature)
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        check_non_negative("top_k", self.top_k)
        if not 0 <= self.min_p < 1:
            raise ValueError(f"min_p must be in [0, 1), got {self.min_p}")
        check_positive("max_new_tokens", self.max_new_tokens)
        if self.first_token_temperature is not None:
            check_positive("first_token_temperature", self.first_token_temperature)

    @property
    def greedy(self) -> bool:
        """Temperature 0 means argmax decoding."""
        return self.temperature == 0

    @property
    def logprob_temperature(self) -> float:
        """The temperature of the distribution the engine's log-probs describe: the sampling
        temperature, 1 for greedy decoding (argmax of the temperature-1 softmax)."""
        return 1.0 if self.greedy else self.temperature
