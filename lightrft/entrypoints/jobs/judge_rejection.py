"""`lightrft rm rejection-sample`: judge data by rejection sampling, then SFT on it.

1. The preference pairs of ``--data`` (preference rows or named reward data sets, text or
   image responses) become pairwise judge prompts, each labelled with the verdict that
   agrees with the human preference (:mod:`~lightrft.adapters.datasets.judge_pairs`).
2. The model (``--model``, through the HF rollout engine) samples ``--n`` judgements of each
   (:func:`~lightrft.application.rejection_sampling.rejection_sample`); a judgement is kept
   when its ``[[X]]`` verdict is the label, read by the ``judge_agreement`` reward source's
   parser.
3. The kept judgements are written as SFT rows (``--out``,
   :mod:`~lightrft.adapters.datasets.judge_sft_rows`), with a summary beside them
   (``<out>.summary.json``: pairs, samples, kept, acceptance rate).
4. With ``--sft RUN_DIR``, ``lightrft sft``'s job trains ``--model`` on those rows
   (``key=value`` overrides go to its config: ``sft.total_steps=...``, ``optim.lr=...``).

Like every writer, it keeps out of other runs: ``--out`` inside a run directory (or inside
``RUN_DIR``) is refused before the model loads, and ``RUN_DIR``'s lock is held from the
start (a run using it is refused at once, not after the sampling), handed to the SFT job
when it starts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.jsonl_files import write_jsonl
from lightrft.adapters.datasets.judge_pairs import load_judge_pairs
from lightrft.adapters.datasets.judge_sft_rows import judge_sft_row
from lightrft.adapters.datasets.prompt_rows import RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.reward_models.judge_agreement import JudgeAgreementReward
from lightrft.application.rejection_sampling import RejectionSample, rejection_sample
from lightrft.domain.types import PromptRecord, SamplingParams
from lightrft.entrypoints.config.loading import load_sft_config
from lightrft.entrypoints.jobs.sft import sft
from lightrft.entrypoints.roots.judge_sampling import JudgeSampler, judge_sampler
from lightrft.entrypoints.run_dir.directory import RunDirectoryLock
from lightrft.entrypoints.run_dir.output_target import check_output_file

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RejectionSampleOptions:
    """Everything ``lightrft rm rejection-sample`` takes."""

    model: str
    data: str
    out: Path
    n: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 512
    batch_size: int = 8
    max_kept_per_prompt: int | None = None
    labels: tuple[str, ...] = ("A", "B")
    seed: int = 0
    modality: str = "text"
    dtype: str = "fp32"
    sft_run_dir: Path | None = None
    sft_overrides: tuple[str, ...] = ()


def judge_prompts(
    rows: Sequence[dict[str, Any]], tokenizer: Any, encoder: Any | None = None
) -> tuple[list[PromptRecord], list[int]]:
    """The prompt records of judge prompt ``rows`` (the judge's chat template applied; their
    media processed by the judge's prompt ``encoder``, None: a text judge) and, for each, the
    index of its row."""
    kinds = {kind: any(kind in row for row in rows) for kind in ("images", "videos")}
    for row in rows:  # a mixed list: an empty list is no media
        for kind, present in kinds.items():
            if present:
                row.setdefault(kind, [])
    source = InMemoryPromptSource(
        rows,
        tokenizer,
        spec=RowSpec(
            images_key="images" if kinds["images"] else None,
            videos_key="videos" if kinds["videos"] else None,
        ),
        prompt_format=PromptFormat(render="auto"),
        name="pairs",
    )
    records = [source[i] for i in range(len(source))]
    if encoder is not None:
        records = [encoder.encode(record) for record in records]
    return records, [int(record.uid.rsplit(":", 1)[1]) for record in records]


def rejection_sample_judgements(
    options: RejectionSampleOptions, sampler: JudgeSampler | None = None
) -> dict[str, Any]:
    """Runs steps 1-4 of the module docstring; returns the summary. ``sampler``: the
    tokenizer and engine (None: the HF engine over ``options.model``)."""
    if options.n < 1:
        raise ValueError(f"--n must be >= 1, got {options.n}")
    check_output_file(options.out, "--out", run_dir=options.sft_run_dir)
    with _held(options.sft_run_dir) if options.sft_run_dir else nullcontext():
        summary = _sample(options, sampler)
    if options.sft_run_dir is not None:
        summary["sft"] = _train(options)
    return summary


@contextmanager
def _held(run_dir: Path) -> Iterator[None]:
    """``run_dir``'s lock while the judgements are sampled (refused at once if a run holds
    it); released for the SFT job, which takes it for the run."""
    lock = RunDirectoryLock(run_dir)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _sample(options: RejectionSampleOptions, sampler: JudgeSampler | None) -> dict[str, Any]:
    """Steps 1-3 of the module docstring; returns the summary."""
    sampler = sampler or judge_sampler(
        options.model, modality=options.modality, dtype=options.dtype
    )
    rows, skipped = load_judge_pairs(options.data, sampler.tokenizer, seed=options.seed)
    records, row_of = judge_prompts(rows, sampler.tokenizer, sampler.encoder)
    sampling = SamplingParams(
        n=options.n,
        temperature=options.temperature,
        top_p=options.top_p,
        max_new_tokens=options.max_new_tokens,
        seed=options.seed,
    )
    judge = JudgeAgreementReward(labels=options.labels)
    result = rejection_sample(
        sampler.engine,
        records,
        sampling,
        judge.agrees,
        batch_size=options.batch_size,
        max_kept_per_prompt=options.max_kept_per_prompt,
    )
    out_dir = options.out.parent
    sft_rows = [
        judge_sft_row(
            rows[row_of[k.prompt_index]], k.text, out_dir, f"pair{row_of[k.prompt_index]}"
        )
        for k in result.kept
    ]
    write_jsonl(sft_rows, options.out)
    summary = _summary(options, result, len(records), skipped)
    summary_path = options.out.with_name(options.out.name + ".summary.json")
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    log.info("rejection_sample.done", **summary)
    return summary


def _summary(
    options: RejectionSampleOptions, result: RejectionSample, pairs: int, skipped: int
) -> dict[str, Any]:
    return {
        "pairs": pairs,
        "skipped_bad_rows": skipped,
        "samples_per_pair": options.n,
        "samples": pairs * options.n,
        "kept": len(result.kept),
        "acceptance_rate": result.acceptance_rate,
        "pairs_with_a_kept_judgement": result.prompts_with_a_kept_judgement,
        "rows": str(options.out),
    }


def _train(options: RejectionSampleOptions) -> dict[str, Any]:
    """``lightrft sft`` of ``options.model`` on the kept rows."""
    if not options.out.read_text().strip():
        raise ValueError(
            f"no judgement reached its label in {options.out}: nothing to fine-tune on "
            "(more samples --n, a higher --temperature, or a stronger --model)"
        )
    overrides = [
        f"model.path={options.model}",
        f"model.modality={options.modality}",
        f"model.dtype={options.dtype}",
        f"sft.train_data.path={options.out}",
        f"logging.run_dir={options.sft_run_dir}",
        "logging.progress=false",
        *options.sft_overrides,
    ]
    return sft(load_sft_config(None, overrides))
