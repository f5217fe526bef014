"""`lightrft eval`: accuracy and pass@k of a model on a prompt set with the rule rewards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightrft.application.evaluator import Evaluator
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.eval_report import save_eval_report
from lightrft.entrypoints.roots.evaluation import eval_root


def evaluate(config: RunConfig, output: Path | None = None) -> dict[str, Any]:
    """Evaluates ``config.model`` on ``config.data.eval``; writes and returns the report."""
    if config.data.eval is None:
        raise ValueError("data.eval is null: nothing to evaluate on")
    root = eval_root(config)
    engine = root.engine()
    settings = root.settings()
    sampling = settings.cycle.eval_sampling
    evaluator = Evaluator(
        engine,
        root.reward_sources(),
        dict(settings.shaping.weights),
        recipes=settings.shaping.recipes,
        accuracy_sources=settings.cycle.eval_accuracy_sources,
    )
    prompts = root.eval_prompts()
    assert prompts is not None  # data.eval is set
    metrics = evaluator.evaluate(prompts, sampling, config.eval.max_prompts)
    report: dict[str, Any] = {
        "model": str(root.model_path()),
        "dataset": config.data.eval.path or f"builtin:{config.data.eval.builtin}",
        "n_samples": sampling.n,
        "temperature": sampling.temperature,
        "metrics": metrics,
    }
    save_eval_report(report, output, config.logging.run_dir)
    for source in root.reward_sources():
        source.close()
    return report
