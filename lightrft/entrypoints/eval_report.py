"""Where ``lightrft eval`` reports go: ``--output``, else ``<logging.run_dir>/eval.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def save_eval_report(report: dict[str, Any], output: Path | None, run_dir: str) -> dict[str, Any]:
    """Writes ``report`` as indented JSON to ``output`` (default ``run_dir/eval.json``) and
    returns it with ``path`` set to the file written."""
    target = output or Path(run_dir) / "eval.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2))
    report["path"] = str(target)
    return report
