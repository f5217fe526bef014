"""`lightrft rm train` / `lightrft rm eval`: pairwise reward-model training on preference
data (the loss, pooling, probing layer and score heads of ``RmTrainOptions``), held-out accuracy, checkpoints and resume, HF export; evaluation of a saved model.

The output directory holds ``checkpoints/``, ``metrics.jsonl``, ``history.jsonl``,
``summary.json`` and ``model/`` (the exported reward model, loadable by
``HfScalarRewardModel.from_pretrained`` and by the ``scalar_rm`` reward source). It is a run
directory like ``lightrft train``'s: one run at a time, ``resume`` / ``overwrite`` to reuse it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import structlog

from lightrft.adapters.datasets import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.preferences import (
    PreferenceSpec,
    in_memory_preferences,
    synthetic_preference_rows,
)
from lightrft.adapters.datasets.rendering import RenderMode
from lightrft.adapters.datasets.reward_sets import load_reward_pairs
from lightrft.adapters.datasets.reward_sets.media_responses import readable_media_responses
from lightrft.adapters.datasets.task_instruction import TaskInstructionRenderer
from lightrft.adapters.hf import default_model_path
from lightrft.adapters.hf.multimodal_inputs import MediaRequirements
from lightrft.adapters.reward_models import (
    PairEncoding,
    RewardLoraParams,
    RewardModelCard,
    ScoreNormalization,
)
from lightrft.adapters.reward_models.score_heads import HeadSpec
from lightrft.application.reward_model_training import (
    RewardModelTrainer,
    RewardTrainParams,
    evaluate_preferences,
)
from lightrft.domain.types import PreferencePair
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.roots.reward_model import (
    RewardModelRoot,
    RmBackendOptions,
    saved_reward_model,
)
from lightrft.entrypoints.run_dir.directory import ResumeChoice, trim_logs_after
from lightrft.entrypoints.run_dir.final_export import FinalState, write_final
from lightrft.entrypoints.run_dir.guard import RunRequest, RunStart, guard_run_directory
from lightrft.entrypoints.run_dir.identity import RM_IDENTITY, fingerprint, flatten

log = structlog.get_logger(__name__)

T = TypeVar("T")

SYNTHETIC = "synthetic"
"""``data`` value selecting the built-in synthetic preference set."""


@dataclass(frozen=True)
class RowSourceOptions:
    """Where a reward model's rows come from (a file or the built-in synthetic set), its
    held-out part (a file, or a seeded fraction) and how prompts are rendered."""

    data: str = SYNTHETIC
    eval_data: str | None = None
    eval_fraction: float = 0.1
    num_synthetic: int = 1000
    system_prompt: str | None = None
    render: RenderMode = "auto"


@dataclass(frozen=True)
class RmDataOptions(RowSourceOptions):
    """Preference pairs: the synthetic set's kinds and instruction, the file's columns."""

    synthetic_kinds: tuple[str, ...] = ("bare", "ramble", "refuse", "wrong")
    synthetic_instruction: str = ""
    spec: PreferenceSpec = field(default_factory=PreferenceSpec)
    task_instruction: str | None = None  # the system message, {prompt}: the row's prompt
    responses: tuple[str, ...] = ("text",)  # what responses may be: text, images, videos, audios


@dataclass(frozen=True)
class RmTrainOptions:
    """Everything ``lightrft rm train`` takes."""

    output: Path
    model: str | None = None
    data: RmDataOptions = field(default_factory=RmDataOptions)
    train: RewardTrainParams = field(default_factory=RewardTrainParams)
    lr: float = 1e-5
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    heads: HeadSpec = field(default_factory=HeadSpec)  # probing layer, pooling, score heads
    max_length: int | None = 512
    strategy: str = "single"
    zero_stage: int | None = None  # strategy deepspeed: its ZeRO stage (None: its default)
    dtype: str = "fp32"
    modality: str = "text"  # the backbone: text, vision-language or audio-language
    max_pixels: int | None = None  # images' pixel bound (None: the model loader's default)
    trackers: tuple[str, ...] = ()  # besides metrics.jsonl: tensorboard, wandb
    wandb_project: str | None = None
    lora_rank: int = 0
    lora_alpha: float = 16.0
    train_backbone: bool = True  # False: only the score head trains (a probe on frozen features)
    resume: ResumeChoice = False  # True: continue the run in ``output``; "auto": if it has one
    overwrite: bool = False  # move a previous run in ``output`` aside first
    resume_changing: tuple[str, ...] = ()  # keys a resume may change (see run_dir.identity)
    normalize_pairs: int = 256
    next_command: NextCommand = field(default_factory=NextCommand)


def _renderer(tokenizer: Any, data: RmDataOptions) -> PromptRenderer:
    prompt_format = PromptFormat(system_prompt=data.system_prompt, render=data.render)
    if data.task_instruction is not None:
        return TaskInstructionRenderer(tokenizer, data.task_instruction, prompt_format)
    return PromptRenderer(tokenizer, prompt_format)


def _read(
    source: str, renderer: PromptRenderer, data: RmDataOptions, seed: int
) -> tuple[list[PreferencePair], int]:
    """The pairs of ``source`` and the number of bad rows skipped."""
    if source == SYNTHETIC:
        rows = synthetic_preference_rows(
            data.num_synthetic,
            seed,
            kinds=data.synthetic_kinds,
            instruction=data.synthetic_instruction,
        )
        return in_memory_preferences(rows, renderer, name=f"synthetic-{seed}")
    # a path, or the original's name:path,name:path list (each name a reward data set)
    pairs, skipped = load_reward_pairs(source, renderer, data.spec, responses=data.responses)
    pairs = readable_media_responses(pairs, renderer.tokenizer, data.spec.frame_sampling)
    if skipped:
        log.warning("rm.data.skipped_rows", source=source, skipped=skipped)
    if not pairs:
        raise ValueError(f"{source}: no usable preference pairs ({skipped} bad rows skipped)")
    return pairs, skipped


class PreferenceSplits(NamedTuple):
    """Training and held-out pairs, and the bad rows skipped reading them."""

    train: list[PreferencePair]
    held_out: list[PreferencePair]
    skipped_rows: int


def preference_splits(tokenizer: Any, data: RmDataOptions, seed: int) -> PreferenceSplits:
    """Train and held-out pairs: the eval file, or a seeded ``eval_fraction`` of the data."""
    renderer = _renderer(tokenizer, data)
    pairs, skipped = _read(data.data, renderer, data, seed)
    if data.eval_data is not None:
        held_out, skipped_held_out = _read(data.eval_data, renderer, data, seed + 1)
        return PreferenceSplits(pairs, held_out, skipped + skipped_held_out)
    train, held_out = held_out_split(pairs, data.eval_fraction, seed)
    return PreferenceSplits(train, held_out, skipped)


def held_out_split(items: Sequence[T], fraction: float, seed: int) -> tuple[list[T], list[T]]:
    """(train, held-out): a seeded ``fraction`` of ``items`` (at least one) held out."""
    if not 0 < fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {fraction}")
    order = list(range(len(items)))
    random.Random(f"rm-split-{seed}").shuffle(order)
    held = max(1, int(len(items) * fraction))
    return [items[i] for i in order[held:]], [items[i] for i in order[:held]]


def train_reward_model(options: RmTrainOptions) -> dict[str, Any]:
    """Trains, evaluates and exports a reward model; returns the summary.

    ``output`` is a run directory like any other (:mod:`~lightrft.entrypoints.run_dir.guard`):
    locked, a previous run there is refused unless ``resume`` / ``overwrite``, a resume's
    identity is checked.
    """
    path = Path(options.model) if options.model else default_model_path()
    root = RewardModelRoot(
        copy_fields(
            RmBackendOptions,
            options,
            "strategy zero_stage lr max_grad_norm weight_decay betas dtype max_pixels trackers "
            "wandb_project",
        )
    )
    request = RunRequest(
        run_dir=Path(options.output),
        resume=options.resume,
        overwrite=options.overwrite,
        keys=RM_IDENTITY,
        fingerprint=lambda: fingerprint(flatten(asdict(options)), RM_IDENTITY, path),
        resume_changing=options.resume_changing,
    )
    with guard_run_directory(request, root.collective) as start:
        return _train_in(options, start, path, root)


def _train_in(
    options: RmTrainOptions, start: RunStart, path: Path, root: RewardModelRoot
) -> dict[str, Any]:
    out = Path(options.output)
    strategy, collective = root.strategy, root.collective
    seed = options.train.seed  # seeds the fresh score head and LoRA adapters
    tokenizer = root.tokenizer(path)
    encoder = root.media_encoder(path, options.modality, tokenizer)
    data = _with_media(options.data, None if encoder is None else encoder.requirements)
    # the data (every row checked) before the weights
    train_pairs, eval_pairs, skipped_rows = preference_splits(tokenizer, data, seed)
    renderer = _renderer(tokenizer, options.data)
    encoding = PairEncoding(not renderer.uses_chat_template, options.max_length)
    card = RewardModelCard(encoding, modality=options.modality, heads=options.heads)
    lora = (
        RewardLoraParams(options.lora_rank, options.lora_alpha, init_seed=seed)
        if options.lora_rank
        else None
    )
    rm = root.reward_model(path, encoder, tokenizer, card, lora, init_seed=seed)
    if not options.train_backbone:
        rm.net.backbone.requires_grad_(False)
    strategy.prepare(rm.module)
    main = collective.rank == 0
    tracker, store = root.outputs(out)
    trainer = RewardModelTrainer(
        rm,
        strategy,
        train_pairs,
        options.train,
        eval_pairs=eval_pairs,
        collective=collective,
        checkpoints=store,
        tracker=tracker,
    )
    log.info(
        "rm.start", pairs=len(train_pairs), held_out=len(eval_pairs), steps=trainer.total_steps
    )
    resumed_from = trainer.step if start.resumes and trainer.resume() else None
    if resumed_from is not None and main:
        trim_logs_after(out, resumed_from)
    start.record(trainer.step)
    history = trainer.run(resume=False)
    evaluated = history[-1] if history and "eval/accuracy" in history[-1] else None
    metrics = evaluated if evaluated is not None else trainer.evaluate(eval_pairs).metrics()
    moments = trainer.score_moments(train_pairs[: options.normalize_pairs])
    normalization = ScoreNormalization(moments.mean, max(moments.std, 1e-6))
    summary: dict[str, Any] = {
        "steps": trainer.step,
        "train_pairs": len(train_pairs),
        "eval_pairs": len(eval_pairs),
        "skipped_rows": skipped_rows,
        "resumed_from": resumed_from,
        **{k: v for k, v in metrics.items() if k.startswith("eval/")},
        "normalization": asdict(normalization),
    }
    final = FinalState(store, trainer.step, trainer.save_checkpoint, out / "checkpoints")
    kept = final.secure()
    if main:
        state = dict(strategy.full_state())
        summary["model"] = str(
            write_final(
                out / "model",
                lambda tmp: rm.export_hf(tmp, state=state, normalization=normalization),
                kept,
                options.next_command,
                state=state,
            )
        )
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if tracker is not None:
        tracker.close()
    log.info("rm.done", accuracy=metrics["eval/accuracy"], steps=trainer.step)
    return summary


def _with_media(data: RmDataOptions, requirements: MediaRequirements | None) -> RmDataOptions:
    """``data`` read for a reward model with a media encoder of ``requirements`` (None: a
    text model): responses of every medium it reads, audio clips at its feature extractor's
    rate."""
    if requirements is None:
        return data
    placeholders = {
        "images": requirements.image_placeholder,
        "videos": requirements.video_placeholder,
        "audios": requirements.audio_placeholder,
    }
    kinds = tuple(dict.fromkeys([*data.responses, *(k for k, v in placeholders.items() if v)]))
    rate = requirements.audio_sampling_rate
    spec = data.spec
    if rate is not None and spec.audio_sampling_rate is None:
        spec = replace(spec, audio_sampling_rate=rate)
    return replace(data, spec=spec, responses=kinds)


def eval_reward_model(
    model: str | Path, data: RmDataOptions, *, micro_batch_size: int = 16, seed: int = 0
) -> dict[str, Any]:
    """Held-out accuracy and margin distribution of a saved reward model on ``data.data``."""
    rm = saved_reward_model(model, micro_batch_size=micro_batch_size)
    data = _with_media(data, None if rm.net.media is None else rm.net.media.requirements)
    pairs, skipped = _read(data.data, _renderer(rm.tokenizer, data), data, seed)
    result = evaluate_preferences(rm, pairs, micro_batch_size)
    return {"model": str(model), "pairs": len(pairs), "skipped_rows": skipped, **result.metrics()}
