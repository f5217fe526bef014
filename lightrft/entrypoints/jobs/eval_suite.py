"""`lightrft eval --data FILE...`: greedy accuracy, pass@k and maj@k per file, one JSON report.

``builtin`` instead of a file evaluates the config's ``data.eval`` prompts (the built-in
arithmetic problems unless ``data.eval.path`` is set). The model is ``model.path`` (any HF directory: a base model, ``lightrft sft``'s or
``lightrft train``'s ``final_model``); generation uses the configured rollout engine.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from lightrft.adapters.rewards import MathAnswerGrader
from lightrft.application.eval_suite import EvalSuite, FileResult, SuiteParams
from lightrft.domain.ports import AnswerGrader, PromptSource
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.eval_report import save_eval_report
from lightrft.entrypoints.roots.evaluation import EvalRoot, eval_prompt_format, eval_root

BUILTIN = "builtin"


def evaluate_files(
    config: RunConfig,
    files: list[Path],
    params: SuiteParams,
    *,
    file_format: str = "auto",
    output: Path | None = None,
    progress: bool = True,
    keep_records: bool = True,
) -> dict[str, Any]:
    """Evaluates ``config.model`` on every file; writes and returns the report."""
    root = eval_root(config)
    sources = {path: _prompts(root, config, path, file_format) for path in files}
    graders = {path: _grader(root, path, file_format) for path in files}
    engine = root.engine()
    if not engine.is_awake:
        engine.wake_up()
    results: dict[str, Any] = {}
    for path, prompts in sources.items():
        total = (
            len(prompts) if params.max_prompts is None else min(params.max_prompts, len(prompts))
        )
        with tqdm(total=total, desc=path.name, unit="prompt", disable=not progress) as bar:
            suite = EvalSuite(engine, graders[path], params, on_prompts=bar.update)
            started = time.perf_counter()
            result = suite.evaluate(path.stem, prompts)
        results[str(path)] = _file_entry(result, time.perf_counter() - started, keep_records)
    report: dict[str, Any] = {
        "model": str(root.model_path()),
        "params": {
            "greedy": params.greedy,
            "n_samples": params.n_samples,
            "ks": list(params.ks),
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_new_tokens": params.max_new_tokens,
            "seed": params.seed,
        },
        "files": results,
    }
    return save_eval_report(report, output, config.logging.run_dir)


def _prompts(root: EvalRoot, config: RunConfig, path: Path, file_format: str) -> PromptSource:
    """``builtin`` names the config's ``data.eval`` set; anything else is a file."""
    if str(path) != BUILTIN:
        return root.file_prompts(path, file_format, eval_prompt_format(config))
    return root.dataset_prompts(config.data.eval or DatasetConfig())


def _grader(root: EvalRoot, path: Path, file_format: str) -> AnswerGrader:
    """The file's grader; ``builtin`` prompts are math answers."""
    return MathAnswerGrader() if str(path) == BUILTIN else root.file_grader(path, file_format)


def _file_entry(result: FileResult, seconds: float, keep_records: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"metrics": result.metrics, "seconds": seconds}
    if keep_records:
        entry["records"] = result.records
    return entry


def format_table(report: dict[str, Any]) -> str:
    """One row per file, one column per metric (those of the first file, in its order)."""
    files = report["files"]
    if not files:
        return "(no files)"
    names = [
        n
        for n in next(iter(files.values()))["metrics"]
        if n == "prompts" or "@" in n or "accuracy" in n
    ]
    header = ["file", *names]
    rows = [
        [Path(path).name, *(_cell(entry["metrics"].get(n)) for n in names)]
        for path, entry in files.items()
    ]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    lines = [
        " | ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True))
        for line in [header, *rows]
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() and value > 1 else f"{value:.4f}"
