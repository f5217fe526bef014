"""The ``sft`` section: supervised fine-tuning data and schedule (``lightrft sft``).

Model, optimizer, backend, logging and checkpoint settings come from the run config's own
sections (``model.*``, ``optim.*``, ``backend.*``, ``logging.*``, ``checkpoint.*``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lightrft.entrypoints.config.base import Section

BUILTIN_INSTRUCTION = "Answer with just the number."
BUILTIN_SYSTEM_PROMPT = "Reply with only the final number."
"""The built-in rows' system message when ``system_prompt`` is null (user data gets none)."""


class SftDataConfig(Section):
    path: str | list[str] | None = Field(
        None,
        description="jsonl/json/parquet/arrow file(s) or save_to_disk directories; null: the "
        "built-in arithmetic problems with their answers as completions.",
    )
    messages_key: str = Field(
        "messages", description="Column of chat rows (assistant turns train)."
    )
    prompt_key: str = Field("prompt", description="Column of the prompt (text or messages).")
    completion_key: str = Field("completion", description="Column of the trained completion.")
    system_prompt: str | None = Field(
        None,
        description="System message put first in prompt/completion rows that have none "
        "(chat rows are trained as written); null: none, except the built-in rows, which "
        f"then get {BUILTIN_SYSTEM_PROMPT!r}.",
    )
    apply_chat_template: bool = Field(True, description="Render rows with the chat template.")
    max_length: int = Field(1024, ge=2, description="Tokens kept per row (cut at the right).")
    on_bad_row: Literal["error", "skip"] = Field("error", description="What a malformed row does.")
    max_samples: int | None = Field(None, gt=0, description="Use at most this many rows.")
    num_builtin: int = Field(512, gt=0, description="Built-in rows generated when path is null.")
    difficulty: int = Field(1, ge=1, le=3, description="Built-in arithmetic difficulty (1-3).")
    seed: int = Field(0, description="Seed of the built-in problem generator.")
    instruction: str = Field(
        BUILTIN_INSTRUCTION, description="Built-in rows: text appended to each question."
    )
    builtin_completion: Literal["solution", "answer"] = Field(
        "solution",
        description="Built-in rows: what the completion is: the worked equation ending on the "
        "answer ('3 + 4 = 7'), or the bare answer ('7').",
    )
    builtin_split: Literal["train", "heldout", "all"] = Field(
        "train",
        description="Built-in rows: which disjoint part of the arithmetic problems to draw "
        "from (the RL demo evaluates on heldout, so SFT never trains on those).",
    )


class SftConfig(Section):
    train_data: SftDataConfig = Field(default_factory=SftDataConfig)
    eval_data: SftDataConfig | None = Field(
        default_factory=lambda: SftDataConfig(num_builtin=64, seed=10_000, builtin_split="heldout"),
        description="Held-out rows for the eval loss; null disables evaluation.",
    )
    epochs: int = Field(1, gt=0, description="Passes over the training rows.")
    total_steps: int | None = Field(
        None, gt=0, description="Optimizer steps (null: every step of every epoch)."
    )
    batch_size: int = Field(16, gt=0, description="Rows per optimizer step per rank.")
    micro_batch_size: int = Field(8, gt=0, description="Rows per forward/backward.")
    max_tokens_per_micro_batch: int | None = Field(
        None,
        gt=0,
        description="Fill micro-batches up to this many tokens instead (with model.packing "
        "they run as one packed row; the loss equals the padded one).",
    )
    eval_every: int | None = Field(
        20, gt=0, description="Eval loss every k steps (and before/after)."
    )
    eval_batch_size: int = Field(16, gt=0, description="Rows per evaluation forward.")
    seed: int = Field(0, description="Seed of the data order and of fresh LoRA adapters.")
