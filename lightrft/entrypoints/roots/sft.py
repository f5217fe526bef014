"""The root of ``lightrft sft`` (and of ``rm train --kind generative``, an SFT run on judge
rows): first the tokenizer, the examples and the number of processes (the run length depends
on them), then the policy, its strategy, tracker and checkpoints of the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from lightrft.adapters.datasets.sft_rows import SftDataset
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config.sft_run_config import SftRunConfig
from lightrft.entrypoints.roots.model_run import ModelRunRoot
from lightrft.entrypoints.roots.tokenizer import Tokenizer
from lightrft.entrypoints.wiring import models
from lightrft.entrypoints.wiring.registrations import register_builtins
from lightrft.entrypoints.wiring.sft_data import build_sft_data


@dataclass(frozen=True)
class SftInputs:
    """What an SFT run's length is computed from."""

    tokenizer: Tokenizer
    pad_token_id: int  # the tokenizer's, 0 when it has none
    train: SftDataset
    eval: SftDataset | None
    processes: int  # every process of the run (sequence-parallel ranks included)


def sft_tokenizer(config: SftRunConfig) -> Tokenizer:
    """The tokenizer (or processor) of ``model.path``."""
    register_builtins()  # the model loaders, before the first one is looked up
    return cast(Tokenizer, models.build_tokenizer(config, models.model_path(config)))


def sft_inputs(
    config: SftRunConfig, data: tuple[SftDataset, SftDataset | None] | None = None
) -> SftInputs:
    """The tokenizer, the (train, eval) examples (``data``, or those of ``sft.train_data`` /
    ``sft.eval_data``, media checked by the modality's prompt encoder) and the processes."""
    tokenizer = sft_tokenizer(config)
    if data is None:
        s = config.sft
        media = models.build_prompt_encoder(config, tokenizer)  # None for text models
        built = build_sft_data(s.train_data, tokenizer, media)
        assert built is not None
        data = built, build_sft_data(s.eval_data, tokenizer, media)
    processes = models.process_rank(config, models.build_accelerator(config))[1]
    return SftInputs(tokenizer, models.pad_token_id(tokenizer), data[0], data[1], processes)


def sft_root(config: SftRunConfig, tokenizer: Tokenizer) -> ModelRunRoot:
    """The run's policy, strategy, collective, tracker and checkpoints (``config`` holds the
    run length in ``train.total_steps``: the strategy sizes its LR schedule from it)."""
    return ModelRunRoot(build_container(config, tokenizer=tokenizer))
