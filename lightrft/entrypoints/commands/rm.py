"""`lightrft rm train` / `lightrft rm eval`: reward models from preference data, and
generative judges from judged responses.

    lightrft rm train --output DIR [--model PATH] [--data FILE|synthetic] [--eval-data FILE] ...
    lightrft rm train --kind generative --output DIR [--data FILE|synthetic] ...
    lightrft rm eval --model DIR --data FILE|synthetic [--output FILE]

``--kind`` picks what ``rm train`` trains (:data:`RM_KINDS`): ``scalar`` (the default), a
Bradley-Terry reward model; ``generative``, a judge fine-tuned on rows ``prompt``,
``response``, ``judgement`` (reasoning ending in a verdict) and/or ``label``, measured by
held-out verdict accuracy (:mod:`~lightrft.entrypoints.jobs.generative_judge`). A flag of one
kind given to another is an error.

Preference files are jsonl / json / parquet rows with ``prompt`` (text or chat messages),
``chosen`` and ``rejected`` (text, or chat conversations ending with the assistant's answer).

A cost model (Safe RLHF): rows whose ``chosen`` is the *more harmful* response, with each
response's safety label (``--chosen-safe-key is_chosen_safe --rejected-safe-key
is_rejected_safe``, booleans); the sign term makes its score > 0 read as unsafe.

``rm train`` also reads the original LightRFT's reward-model trainers' flags (``--pretrain``,
``--train_data``, ``--loss_type`` ...: :mod:`~lightrft.entrypoints.config.rm_flag_table`),
all problems of a command line in one message; ``--dry-run`` prints the resolved options.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightrft.domain.registry import Registry
from lightrft.entrypoints.commands.resume_flags import add_resume_changing, stated_keys

NAME = "rm"
HELP = "train or evaluate a reward model on preference data"


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default="synthetic", help="preference file, or 'synthetic'")
    parser.add_argument("--num-synthetic", type=int, default=1000, help="size of the synthetic set")
    parser.add_argument(
        "--synthetic-kinds",
        default="bare,ramble,refuse,wrong",
        help="rejected-answer kinds of the synthetic set (comma-separated)",
    )
    parser.add_argument("--prompt-key", default="prompt")
    parser.add_argument("--chosen-key", default="chosen")
    parser.add_argument("--rejected-key", default="rejected")
    parser.add_argument("--margin-key", default=None, help="per-pair margin column (optional)")
    parser.add_argument(
        "--chosen-safe-key",
        default=None,
        help="cost model: column saying whether the chosen (more harmful) response is safe",
    )
    parser.add_argument(
        "--rejected-safe-key", default=None, help="cost model: the same for the rejected one"
    )
    parser.add_argument(
        "--images-key", default=None, help="column of the prompt's images (vision-language RMs)"
    )
    parser.add_argument(
        "--audios-key", default=None, help="column of the prompt's audio (audio-language RMs)"
    )
    parser.add_argument(
        "--videos-key", default=None, help="column of the prompt's videos (vision-language RMs)"
    )
    parser.add_argument(
        "--fps",
        type=float,
        default=None,
        help="frames a second sampled from every video, prompt's or response's (default 2; "
        "0: every frame)",
    )
    parser.add_argument(
        "--max-frames", type=int, default=None, help="at most this many per video (default 16)"
    )
    parser.add_argument("--skip-bad-rows", action="store_true", help="skip (and count) bad rows")
    parser.add_argument("--system-prompt", default=None)
    parser.add_argument("--render", choices=["auto", "chat", "plain"], default="auto")


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rm_command", required=True)
    train = sub.add_parser("train", help="Bradley-Terry training, held-out accuracy, export")
    train.add_argument("--output", type=Path, help="output directory (required)")
    train.add_argument("--model", help="base model directory (default: the embedded model)")
    _data_arguments(train)
    train.add_argument("--eval-data", help="held-out preference file")
    train.add_argument("--eval-fraction", type=float, default=0.1)
    train.add_argument("--batch-size", type=int, default=16)
    train.add_argument("--micro-batch-size", type=int, default=8)
    train.add_argument("--epochs", type=int, default=1)
    train.add_argument("--total-steps", type=int, default=None)
    train.add_argument("--lr", type=float, default=1e-5)
    train.add_argument("--margin", type=float, default=0.0)
    _variant_arguments(train)
    train.add_argument("--max-length", type=int, default=512)
    train.add_argument("--eval-every", type=int, default=None)
    train.add_argument("--checkpoint-every", type=int, default=None)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--strategy", default="single", help="single, fsdp2 or deepspeed")
    train.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32")
    train.add_argument(
        "--modality",
        choices=["text", "vision-language", "audio-language", "omni"],
        default="text",
        help="the backbone: a causal LM, Qwen2-VL / Qwen2.5-VL, Qwen2-Audio, or a saved "
        "Qwen2.5-Omni thinker",
    )
    train.add_argument("--lora-rank", type=int, default=0, help="> 0: LoRA on the backbone")
    train.add_argument("--lora-alpha", type=float, default=16.0)
    train.add_argument(
        "--head-only", action="store_true", help="train only the score head (frozen backbone)"
    )
    start = train.add_mutually_exclusive_group()
    start.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        type=_resume_choice,
        help="continue the run in --output from its newest checkpoint ('auto': if it has one)",
    )
    start.add_argument(
        "--overwrite", action="store_true", help="move a previous run in --output aside first"
    )
    start.add_argument(
        "--no-resume", action="store_true", help="start fresh (the default; kept for scripts)"
    )
    add_resume_changing(train)
    train.add_argument(
        "--dry-run", action="store_true", help="print the resolved options; train nothing"
    )
    train.add_argument(
        "--tracker", dest="trackers", action="append", default=[], help="tensorboard or wandb"
    )
    train.add_argument("--wandb-project", default=None)
    train.add_argument("--weight-decay", type=float, default=0.0)
    train.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.999))
    train.add_argument("--zero-stage", type=int, default=None, help="--strategy deepspeed's stage")
    train.add_argument("--max-pixels", type=int, default=None, help="image pixel bound")
    train.add_argument("--kind", choices=RM_KINDS.names(), default="scalar", help="what to train")
    _judge_arguments(train)
    _process_arguments(train)
    flags = {dest for kind in RM_KINDS.names() for dest in RM_KINDS.get(kind).flags}
    train.set_defaults(kind_flag_defaults={dest: train.get_default(dest) for dest in flags})
    train.set_defaults(train_options={a.dest: tuple(a.option_strings) for a in train._actions})
    ev = sub.add_parser("eval", help="accuracy and reward-margin distribution")
    ev.add_argument("--model", required=True, help="reward model directory")
    _data_arguments(ev)
    ev.add_argument("--micro-batch-size", type=int, default=16)
    ev.add_argument("--output", type=Path, help="write the report as JSON here too")
    from lightrft.entrypoints.commands.rm_rejection import add_rejection_sample

    add_rejection_sample(sub)


def _variant_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--kind scalar: loss, probing layer, pooling, heads")
    group.add_argument(
        "--loss-type", default="sigmoid", help="sigmoid (Bradley-Terry, with --margin), logexp, hps"
    )
    group.add_argument("--pooling", default="last", help="last, mean or attn")
    group.add_argument(
        "--probing-layer", type=int, default=None, help="read hidden_states[k] (k<0: from L)"
    )
    group.add_argument("--heads", default="", help="named score heads, comma-separated")
    group.add_argument("--head-arch", choices=["linear", "mlp"], default="linear")
    group.add_argument(
        "--head-weights", default="", help="the heads' weights in the score (default: equal)"
    )
    group.add_argument(
        "--scale-for-train", action="store_true", help="learned logit scale on training scores"
    )
    group.add_argument("--head-labels-key", default=None, help="per-head verdicts {head: A|B|C}")
    group.add_argument(
        "--task-instruction", default=None, help="system message; {prompt}: the row's prompt"
    )


def _judge_arguments(parser: argparse.ArgumentParser) -> None:
    judge = parser.add_argument_group("--kind generative (a judge)")
    judge.add_argument("--response-key", default="response")
    judge.add_argument(
        "--judgement-key", default="judgement", help="column of the judge's reasoning + verdict"
    )
    judge.add_argument("--label-key", default="label", help="column of the verdict itself")
    judge.add_argument("--reference-key", default="reference")
    judge.add_argument(
        "--template",
        default=None,
        help="judge prompt with {prompt}, {response}, {reference} (default: the generative_rm "
        "source's built-in one)",
    )
    judge.add_argument("--verdict", choices=VERDICT_CHOICES, default="score", help="verdict kind")
    judge.add_argument("--max-score", type=float, default=10.0, help="scale of 'Score: X'")
    judge.add_argument(
        "--labels", type=_labels, default=None, help='label verdicts as JSON: {"A": 1, "B": 0}'
    )
    judge.add_argument("--max-new-tokens", type=int, default=256, help="verdict length limit")
    judge.add_argument(
        "--eval-batch-size", type=int, default=32, help="held-out rows per verdict batch"
    )


def _process_arguments(parser: argparse.ArgumentParser) -> None:
    prm = parser.add_argument_group("--kind process (a process reward model)")
    prm.add_argument(
        "--separator", default="\n\n", help="string closing every step (e.g. '<step>', 'ки')"
    )
    prm.add_argument("--positive-token", default="+", help="label token of a good step")
    prm.add_argument("--negative-token", default="-", help="label token of a bad step")
    prm.add_argument("--steps-key", default="steps", help="column of the step texts")
    prm.add_argument("--labels-key", default="labels", help="column of the step labels")
    prm.add_argument("--ratings-key", default="ratings", help="PRM800K-style ratings 1/0/-1")
    prm.add_argument("--input-key", default="input", help="tagged text (Math-Shepherd layout)")
    prm.add_argument("--step-tag", default="ки", help="the step tag of --input-key rows")
    prm.add_argument(
        "--neutral-label", type=float, default=1.0, help="label of a rating of 0 (neutral)"
    )


VERDICT_CHOICES = ("label", "score")
"""The ``generative_rm`` verdict kinds (the keys of ``VERDICT_KINDS``; a test checks)."""


def _labels(text: str) -> dict[str, float]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"expected a JSON object, {error}") from None
    ok = isinstance(value, dict) and bool(value)
    if not (ok and all(isinstance(v, int | float) for v in value.values())):
        raise argparse.ArgumentTypeError(f"expected a JSON object label -> number, got {text!r}")
    return {str(k): float(v) for k, v in value.items()}


def _resume_choice(text: str) -> bool | str:
    if text == "auto":
        return "auto"
    if text.lower() in ("true", "yes", "on", "1"):
        return True
    if text.lower() in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true, false or auto, got {text!r}")


def _frame_sampling(args: argparse.Namespace) -> Any:
    """``--fps`` / ``--max-frames`` (unset: 2 frames a second, at most 16; fps 0: all)."""
    from lightrft.adapters.datasets.video_frames import FrameSampling

    default = FrameSampling()
    fps = default.fps if args.fps is None else (args.fps or None)
    return FrameSampling(fps, default.max_frames if args.max_frames is None else args.max_frames)


def _data_options(args: argparse.Namespace) -> Any:
    from lightrft.adapters.datasets.preferences import PreferenceSpec
    from lightrft.entrypoints.jobs.reward_model import RmDataOptions

    spec = PreferenceSpec(
        prompt_key=args.prompt_key,
        chosen_key=args.chosen_key,
        rejected_key=args.rejected_key,
        margin_key=args.margin_key,
        chosen_safe_key=args.chosen_safe_key,
        rejected_safe_key=args.rejected_safe_key,
        on_bad_row="skip" if args.skip_bad_rows else "error",
        images_key=args.images_key,
        audios_key=args.audios_key,
        videos_key=args.videos_key,
        frame_sampling=_frame_sampling(args),
        head_labels_key=getattr(args, "head_labels_key", None),
    )
    return RmDataOptions(
        data=args.data,
        eval_data=getattr(args, "eval_data", None),
        eval_fraction=getattr(args, "eval_fraction", 0.1),
        num_synthetic=args.num_synthetic,
        synthetic_kinds=tuple(k for k in args.synthetic_kinds.split(",") if k),
        spec=spec,
        system_prompt=args.system_prompt,
        render=args.render,
        task_instruction=getattr(args, "task_instruction", None),
    )


def run(args: argparse.Namespace, rest: list[str]) -> int:
    if args.rm_command == "rejection-sample":
        from lightrft.entrypoints.commands.rm_rejection import run_rejection_sample

        return run_rejection_sample(args, rest)
    if rest and args.rm_command == "train":
        _read_original_flags(args, rest)
    elif rest:
        raise ValueError(f"lightrft rm eval takes no key=value overrides, got {rest}")
    if args.rm_command == "eval":
        from lightrft.entrypoints.jobs.reward_model import eval_reward_model

        report = eval_reward_model(
            args.model, _data_options(args), micro_batch_size=args.micro_batch_size
        )
        text = json.dumps(report, indent=2)
        if args.output is not None:
            args.output.write_text(text + "\n")
        print(text)
        return 0
    kind = RM_KINDS.get(args.kind)
    _refuse_other_kinds_flags(args)
    if args.output is None:
        raise ValueError("rm train needs --output (or the original's --save_path)")
    if args.dry_run:
        print(json.dumps(kind.options(args), indent=2, default=str))
        return 0
    summary = kind.train(args)
    print(json.dumps(summary, indent=2))
    print(kind.report(summary))
    return 0


def _other_kinds_flags(args: argparse.Namespace) -> list[str]:
    """One problem per flag another kind reads set to other than its default."""
    own = set(RM_KINDS.get(args.kind).flags)
    return [
        f"--{dest.replace('_', '-')} applies to --kind {_owner(dest)}, not {args.kind}"
        for dest, default in args.kind_flag_defaults.items()
        if dest not in own and getattr(args, dest) != default
    ]


def _refuse_other_kinds_flags(args: argparse.Namespace) -> None:
    """A flag another kind reads, set to other than its default, is an error (not ignored)."""
    problems = _other_kinds_flags(args)
    if problems:
        raise ValueError(problems[0])


def _read_original_flags(args: argparse.Namespace, rest: list[str]) -> None:
    """Applies the original trainers' flags in ``rest`` to ``args`` (their defaults for the
    model and loss under them, for ``--kind scalar``), or raises one error listing every
    problem (unknown flags, refused ones, flags of the other kind)."""
    import os

    from lightrft.entrypoints.config.legacy_flags import FlagError, read_args
    from lightrft.entrypoints.config.rm_flag_table import ORIGINAL_DEFAULTS, RM_FLAGS, RM_RULES

    def no_overrides(text: str) -> Any:
        raise FlagError(f"rm train takes no key=value overrides (got ={text})")

    own = set(RM_KINDS.get(args.kind).flags)
    others = {d for k in RM_KINDS.names() for d in RM_KINDS.get(k).flags} - own
    given = [w[2:].partition("=")[0].replace("-", "_") for w in rest if w.startswith("--")]
    problems = [
        f"--{name} applies to --kind {_owner(dest)}, not {args.kind}"
        for name in dict.fromkeys(given)
        if name in RM_FLAGS
        for dest in [d for d in RM_FLAGS[name].keys if d in others][:1]
    ] + _other_kinds_flags(args)  # this command's own flags given to the wrong kind
    try:
        reading = read_args(
            rest,
            no_overrides,
            table=RM_FLAGS,
            rules=RM_RULES,
            unknown_hint="not a flag of the original LightRFT's reward-model trainers nor of "
            "`lightrft rm train` (lightrft rm train --help; docs/reward-models.md)",
        )
    except FlagError as error:
        raise FlagError("\n".join([str(error), *problems])) from None
    if problems:
        raise FlagError("\n".join(problems))
    settings = dict(reading.overrides)
    if args.kind == "scalar":
        unset = {d: v for d, v in ORIGINAL_DEFAULTS.items() if _unset(args, d)}
        settings = unset | settings
        if _unset(args, "modality") and settings.get("model"):
            from lightrft.adapters.reward_models.loading import checkpoint_modality

            # the original's SRM trainers are per modality (train_srm_vl.py, _al.py)
            settings["modality"] = checkpoint_modality(settings["model"])
    for dest, value in settings.items():
        setattr(args, dest, _typed(dest, value))
    os.environ.update(reading.environment)


def _owner(dest: str) -> str:
    return " or ".join(k for k in RM_KINDS.names() if dest in RM_KINDS.get(k).flags)


def _unset(args: argparse.Namespace, dest: str) -> bool:
    """Whether the command line does not name ``dest``'s own flag (``--seed 0`` is set)."""
    options = args.train_options.get(dest, ())
    return not any(w == o or w.startswith(o + "=") for w in args.argv for o in options)


def _typed(dest: str, value: Any) -> Any:
    """A flag's value as ``rm train``'s option holds it."""
    if dest == "output":
        return Path(value)
    if dest == "trackers":
        return list(value)
    return value


def _scalar_options(args: argparse.Namespace) -> Any:
    from lightrft.adapters.reward_models.score_heads import HeadSpec
    from lightrft.application.reward_model_training import RewardTrainParams
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.reward_model import RmTrainOptions
    from lightrft.entrypoints.next_command import NextCommand

    params = copy_fields(
        RewardTrainParams,
        args,
        "batch_size micro_batch_size epochs total_steps margin loss_type eval_every "
        "checkpoint_every seed",
    )
    heads = HeadSpec(
        pooling=args.pooling,
        probing_layer=args.probing_layer,
        heads=_words(args.heads),
        head_arch=args.head_arch,
        scale_for_train=args.scale_for_train,
        weights=tuple(float(w) for w in _words(args.head_weights)),
    )
    return copy_fields(
        RmTrainOptions,
        args,
        "output model lr weight_decay max_length strategy zero_stage dtype modality max_pixels "
        "lora_rank lora_alpha resume overwrite wandb_project",
        betas=tuple(args.betas),
        trackers=tuple(args.trackers),
        heads=heads,
        data=_data_options(args),
        train=params,
        train_backbone=not args.head_only,
        resume_changing=tuple(stated_keys(args)),
        next_command=NextCommand(args.argv),
    )


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


def _train_scalar(args: argparse.Namespace) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.reward_model import train_reward_model

    return train_reward_model(_scalar_options(args))


def _generative_options(args: argparse.Namespace) -> Any:
    from lightrft.adapters.datasets.judge_rows import JudgeRowSpec
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.generative_judge import (
        JudgeDataOptions,
        JudgeFormat,
        JudgeTrainOptions,
    )
    from lightrft.entrypoints.next_command import NextCommand

    spec = copy_fields(
        JudgeRowSpec,
        args,
        "prompt_key response_key judgement_key label_key reference_key",
        on_bad_row="skip" if args.skip_bad_rows else "error",
    )
    data = copy_fields(
        JudgeDataOptions,
        args,
        "data eval_data eval_fraction num_synthetic system_prompt render",
        spec=spec,
    )
    judge = JudgeFormat(
        **({"template": args.template} if args.template is not None else {}),
        **({"labels": args.labels} if args.labels is not None else {}),
        verdict=args.verdict,
        max_score=args.max_score,
        max_new_tokens=args.max_new_tokens,
    )
    return copy_fields(
        JudgeTrainOptions,
        args,
        "output model batch_size micro_batch_size epochs total_steps lr max_length eval_every "
        "eval_batch_size checkpoint_every seed strategy dtype lora_rank lora_alpha resume "
        "overwrite",
        data=data,
        judge=judge,
        resume_changing=tuple(stated_keys(args)),
        next_command=NextCommand(args.argv),
    )


def _train_generative(args: argparse.Namespace) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.generative_judge import train_generative_judge

    return train_generative_judge(_generative_options(args))


def _as_json(options: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(options)


def _train_process(args: argparse.Namespace) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.process_reward_model import train_process_reward_model

    return train_process_reward_model(_process_options(args))


def _process_options(args: argparse.Namespace) -> Any:
    from lightrft.adapters.datasets.step_label_rows import StepRowSpec
    from lightrft.application.reward_model_training import RewardTrainParams
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.process_reward_model import (
        PrmCardOptions,
        PrmTrainOptions,
        StepDataOptions,
    )
    from lightrft.entrypoints.next_command import NextCommand

    spec = copy_fields(
        StepRowSpec,
        args,
        "prompt_key steps_key labels_key ratings_key input_key label_key positive_token "
        "negative_token neutral_label",
        tag=args.step_tag,
        images_key=args.images_key,
        on_bad_row="skip" if args.skip_bad_rows else "error",
    )
    data = copy_fields(
        StepDataOptions,
        args,
        "data eval_data eval_fraction num_synthetic system_prompt render",
        spec=spec,
    )
    params = copy_fields(
        RewardTrainParams,
        args,
        "batch_size micro_batch_size epochs total_steps eval_every checkpoint_every seed",
    )
    return copy_fields(
        PrmTrainOptions,
        args,
        "output model lr max_length strategy dtype modality resume overwrite",
        data=data,
        card=copy_fields(PrmCardOptions, args, "separator positive_token negative_token"),
        train=params,
        resume_changing=tuple(stated_keys(args)),
        next_command=NextCommand(args.argv),
    )


@dataclass(frozen=True)
class RmKind:
    """One kind of model ``rm train`` trains: the flags only it reads (argparse dests), its
    job (parsed arguments -> summary), the summary's one-line report, and its resolved
    options (``--dry-run``)."""

    flags: tuple[str, ...]
    train: Callable[[argparse.Namespace], dict[str, Any]]
    report: Callable[[dict[str, Any]], str]
    options: Callable[[argparse.Namespace], dict[str, Any]]


RM_KINDS: Registry[RmKind] = Registry("reward-model kind")
RM_KINDS.add(
    "scalar",
    RmKind(
        flags=(
            "synthetic_kinds",
            "chosen_key",
            "rejected_key",
            "margin_key",
            "chosen_safe_key",
            "rejected_safe_key",
            "margin",
            "head_only",
            "modality",
            "images_key",
            "audios_key",
            "videos_key",
            "fps",
            "max_frames",
            "loss_type",
            "pooling",
            "probing_layer",
            "heads",
            "head_arch",
            "head_weights",
            "scale_for_train",
            "head_labels_key",
            "task_instruction",
            "weight_decay",
            "betas",
            "trackers",
            "wandb_project",
            "zero_stage",
            "max_pixels",
        ),
        train=_train_scalar,
        options=lambda args: _as_json(_scalar_options(args)),
        report=lambda s: f"held-out preference accuracy: {s['eval/accuracy']:.3f}",
    ),
)
RM_KINDS.add(
    "generative",
    RmKind(
        flags=(
            "response_key",
            "judgement_key",
            "label_key",
            "reference_key",
            "template",
            "verdict",
            "max_score",
            "labels",
            "max_new_tokens",
            "eval_batch_size",
        ),
        train=_train_generative,
        options=lambda args: _as_json(_generative_options(args)),
        report=lambda s: (
            "held-out verdict accuracy: "
            f"{s['verdict_accuracy_before']:.3f} before, {s['verdict_accuracy_after']:.3f} after"
        ),
    ),
)
RM_KINDS.add(
    "process",
    RmKind(
        flags=(
            "separator",
            "positive_token",
            "negative_token",
            "steps_key",
            "labels_key",
            "ratings_key",
            "input_key",
            "step_tag",
            "neutral_label",
            "label_key",
            "modality",
            "images_key",
        ),
        train=_train_process,
        options=lambda args: _as_json(_process_options(args)),
        report=lambda s: (
            "held-out step accuracy: "
            f"{s.get('before/step_accuracy', float('nan')):.3f} before, "
            f"{s.get('eval/step_accuracy', float('nan')):.3f} after"
        ),
    ),
)
