"""`lightrft checkpoints verify RUN_DIR`: every checkpoint of a run and its state, printed one
line each; the exit status says whether any is damaged."""

from __future__ import annotations

from pathlib import Path

from lightrft.adapters.checkpoint.verify import checkpoint_stores, inspect_store


def verify_checkpoints(run_dir: Path) -> int:
    """Prints each checkpoint's status and problems; returns 0 when every checkpoint is intact
    (or unverified), 1 when any is damaged or there is none."""
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} does not exist")
    checkpoints = run_dir / "checkpoints"
    reports = [r for store in checkpoint_stores(checkpoints) for r in inspect_store(store)]
    if not reports:
        print(f"no checkpoints in {checkpoints}")
        return 1
    for report in reports:
        step = "-" if report.step is None else str(report.step)
        print(f"{report.status:<11} step {step:>8}  {report.directory}")
        for problem in report.problems:
            print(f"    {problem}")
    return 1 if any(r.status == "damaged" for r in reports) else 0
