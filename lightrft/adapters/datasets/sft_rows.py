"""Supervised fine-tuning rows -> :class:`~lightrft.domain.sft.SftExample`.

Two row shapes, told apart per row:

* chat: ``{"messages": [{"role", "content"}, ...]}``; every assistant message is trained,
  everything else (system, user, tool turns, the template's role headers) is context; the
  chat is rendered as written (the format's ``system_prompt`` is not added);
* prompt/completion: ``{"prompt": str or messages, "completion": str}``; the completion is
  trained.

With a chat template (``render`` "chat", or "auto" when the tokenizer has one) a
prompt/completion row becomes the chat ``prompt + [assistant: completion]``, the format's
``system_prompt`` first when the prompt has no system message. The chat is
rendered once and tokenized with character offsets; the assistant spans are found by
rendering the growing prefixes of the chat (``messages[:i]`` with the generation prompt,
then ``messages[:i+1]``), so a token is trained exactly when it starts inside an assistant
message's rendering (its end-of-turn marker included). Without a template the prompt is
tokenized with the tokenizer's special tokens and the completion is appended with EOS.

Messages may carry images and audio as content parts (``{"type": "image", "image": path}``,
:mod:`~lightrft.adapters.datasets.chat_media`); with the model's media encoder (``media``)
each placeholder is expanded to its item's positions (never trained) and the example carries
the processed media. ``max_length`` counts the expanded tokens; a row with media is cut at
the right only when no media placeholder is cut (else it is a bad row: a cut image would no
longer match its placeholders).

Chats are checked as RL prompt chats are (:mod:`~lightrft.adapters.datasets.chat_check`:
known roles in a valid order, no empty assistant turn). Rows longer than ``max_length``
tokens are cut at the right; a row left without trained tokens is dropped (counted in
:class:`SftStats`). Malformed rows raise one
:class:`~lightrft.adapters.datasets.bad_rows.BadRowsError` naming file, row and key of each,
or are skipped with ``on_bad_row="skip"``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError, BadRowPolicy, BadRows, with_bad_lines
from lightrft.adapters.datasets.chat_check import check_chat
from lightrft.adapters.datasets.chat_media import (
    MediaExpander,
    cut_keeps_media,
    expand_row,
    split_chat_media,
)
from lightrft.adapters.datasets.hf_prompt_dataset import read_table
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.domain.sft import SftExample

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class SftRowSpec:
    """Keys of the two row shapes, the length bound and the bad-row policy."""

    messages_key: str = "messages"
    prompt_key: str = "prompt"
    completion_key: str = "completion"
    max_length: int | None = 1024
    on_bad_row: BadRowPolicy = "error"
    audio_sampling_rate: int | None = None  # every audio part's rate (None: any)

    def __post_init__(self) -> None:
        if self.max_length is not None and self.max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {self.max_length}")
        if self.on_bad_row not in ("error", "skip"):
            raise ValueError(f"on_bad_row must be error or skip, got {self.on_bad_row!r}")


@dataclass(frozen=True)
class SftStats:
    """Rows read, kept, skipped as malformed, truncated, and dropped (nothing left to train)."""

    rows: int
    kept: int
    skipped_bad_rows: int = 0
    truncated: int = 0
    dropped_empty: int = 0


class SftDataset(Sequence[SftExample]):
    """Tokenized SFT examples (a read-only sequence) and the :class:`SftStats` of building it."""

    def __init__(self, examples: list[SftExample], stats: SftStats) -> None:
        self._examples, self.stats = examples, stats

    def __len__(self) -> int:
        return len(self._examples)

    def __getitem__(self, index: Any) -> Any:
        return self._examples[index]


def load_sft_dataset(
    paths: PathLike | Sequence[PathLike],
    tokenizer: Any,
    *,
    spec: SftRowSpec | None = None,
    prompt_format: PromptFormat | None = None,
    split: str = "train",
    media: MediaExpander | None = None,
) -> SftDataset:
    """SFT examples from jsonl/json/parquet/arrow files or ``save_to_disk`` directories."""
    files = [Path(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    if not files:
        raise ValueError("paths must name at least one file or directory")

    spec = spec or SftRowSpec()
    tables = [
        read_table(file, split=split, on_bad_row=spec.on_bad_row, defer_bad_lines=True)
        for file in files
    ]

    def refs() -> Iterator[RowRef]:
        for file, table in zip(files, tables, strict=True):
            for index, row in enumerate(table.rows):
                where = table.where(file, index)
                base = file if file.is_dir() else file.parent
                yield RowRef(uid=f"{file.stem}:{index}", where=where, row=row, base_dir=base)

    built = with_bad_lines(
        [error for table in tables for error in table.bad_lines],
        lambda: build_sft_examples(
            refs(), tokenizer, spec=spec, prompt_format=prompt_format, media=media
        ),
    )
    lines = sum(table.skipped_lines for table in tables)  # bad lines are skipped rows too
    stats = replace(
        built.stats,
        rows=built.stats.rows + lines,
        skipped_bad_rows=built.stats.skipped_bad_rows + lines,
    )
    dataset = SftDataset(list(built), stats)
    if not dataset:
        raise ValueError(f"no usable SFT rows in {[str(f) for f in files]}: {dataset.stats}")
    return dataset


def build_sft_examples(
    rows: Iterable[RowRef],
    tokenizer: Any,
    *,
    spec: SftRowSpec | None = None,
    prompt_format: PromptFormat | None = None,
    media: MediaExpander | None = None,
) -> SftDataset:
    """Tokenizes ``rows`` (see the module docstring) into an :class:`SftDataset`;
    ``media``: the model's media encoder (None: rows with media are bad rows)."""
    spec = spec or SftRowSpec()
    renderer = PromptRenderer(tokenizer, prompt_format)
    examples: list[SftExample] = []
    total = truncated = dropped = 0
    bad = BadRows(spec.on_bad_row)
    for ref in rows:
        total += 1
        try:
            ids, trained, payload = _tokenize_row(ref, spec, renderer, media)
            if spec.max_length is not None and len(ids) > spec.max_length:
                _check_cut(ids, spec.max_length, media if payload else None, ref.where)
                ids, trained = ids[: spec.max_length], trained[: spec.max_length]
                truncated += 1
        except BadRowError as error:
            bad.add(error)
            continue
        example = _split(ref.uid, ids, trained, payload)
        if example is None:
            dropped += 1
            continue
        examples.append(example)
    skipped = bad.check()
    return SftDataset(examples, SftStats(total, len(examples), skipped, truncated, dropped))


def _split(
    uid: str, ids: list[int], trained: list[int], payload: dict[str, Any]
) -> SftExample | None:
    """Cuts at the first trained token (keeping at least one context token)."""
    if 1 not in trained[1:]:
        return None
    first = max(1, trained.index(1))
    return SftExample(uid, tuple(ids[:first]), tuple(ids[first:]), tuple(trained[first:]), payload)


def _check_cut(ids: list[int], limit: int, media: MediaExpander | None, where: str) -> None:
    if cut_keeps_media(ids, limit, media):
        return
    assert media is not None
    raise BadRowError(
        where,
        "max_length",
        f"the row is {len(ids)} tokens with its {media.noun} placeholders expanded, and cutting "
        f"it to max_length ({limit}) would cut its media (never truncated); raise max_length "
        "or lower model.max_pixels; for",
    )


def _tokenize_row(
    ref: RowRef, spec: SftRowSpec, renderer: PromptRenderer, media: MediaExpander | None
) -> tuple[list[int], list[int], dict[str, Any]]:
    """Token ids of the row, a 0/1 trained flag per token and the media payload ({} if
    none), every media placeholder expanded."""
    row = ref.row
    if row.get(spec.messages_key) is not None:
        key = spec.messages_key
        chat = _messages(row[key], ref.where, key)
        if not any(m["role"] == "assistant" for m in chat):
            raise BadRowError(ref.where, key, "no assistant message in")
        if not renderer.uses_chat_template:
            raise BadRowError(ref.where, key, "a chat row needs a chat template for")
        rate = spec.audio_sampling_rate
        split = split_chat_media(chat, ref.where, key, base_dir=ref.base_dir, audio_rate=rate)
        ids, trained = _chat_tokens(split.chat, renderer)  # as written: no system prompt added
        return expand_row(ids, trained, split.media, media, ref.where, key)
    return (*_prompt_completion_tokens(ref, spec, renderer), {})


def _prompt_completion_tokens(
    ref: RowRef, spec: SftRowSpec, renderer: PromptRenderer
) -> tuple[list[int], list[int]]:
    row = ref.row
    prompt, completion = row.get(spec.prompt_key), row.get(spec.completion_key)
    if prompt is None:
        problem = f"no {spec.messages_key!r} chat and missing key"
        raise BadRowError(ref.where, spec.prompt_key, problem)
    if not isinstance(completion, str) or not completion:
        raise BadRowError(ref.where, spec.completion_key, "expected a non-empty string in")
    content: Any = (
        prompt if isinstance(prompt, str) else _messages(prompt, ref.where, spec.prompt_key)
    )
    if isinstance(content, str) and not content.strip():
        raise BadRowError(ref.where, spec.prompt_key, "empty prompt in")
    if renderer.uses_chat_template:
        chat = [*renderer.messages(content), {"role": "assistant", "content": completion}]
        return _chat_tokens(chat, renderer)
    tok = renderer.tokenizer
    prompt_ids = renderer.tokenize([renderer.text(content)])[0]
    completion_ids = list(tok(completion, add_special_tokens=False)["input_ids"])
    if tok.eos_token_id is not None:
        completion_ids.append(int(tok.eos_token_id))
    return prompt_ids + completion_ids, [0] * len(prompt_ids) + [1] * len(completion_ids)


def _messages(value: Any, where: str, key: str) -> list[dict[str, Any]]:
    ok = isinstance(value, list) and bool(value)
    ok = ok and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in value)
    if not ok:
        raise BadRowError(where, key, "expected a list of {role, content} messages in")
    check_chat(value, where, key)  # the same checks as RL prompt chats
    return [dict(m) for m in value]


def _chat_tokens(
    chat: list[dict[str, Any]], renderer: PromptRenderer
) -> tuple[list[int], list[int]]:
    render = renderer.tokenizer.apply_chat_template
    kwargs = dict(renderer.format.chat_template_kwargs)
    full = str(render(chat, tokenize=False, **kwargs))
    spans: list[tuple[int, int]] = []
    for i, message in enumerate(chat):
        if message["role"] != "assistant":
            continue
        head = str(render(chat[:i], tokenize=False, add_generation_prompt=True, **kwargs))
        upto = str(render(chat[: i + 1], tokenize=False, **kwargs))
        if not (upto.startswith(head) and full.startswith(upto)):
            raise ValueError(
                "the chat template does not render a chat as the concatenation of its turns; "
                "SFT cannot locate the assistant tokens (use prompt/completion rows without a "
                "chat template: data.apply_chat_template=false)"
            )
        spans.append((len(head), len(upto)))
    encoded = renderer.tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    trained = [int(any(a <= start < b for a, b in spans)) for start, _ in encoded["offset_mapping"]]
    return list(encoded["input_ids"]), trained
