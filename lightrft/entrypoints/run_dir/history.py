"""The record of a run's starts and resumes: ``history.jsonl`` and one config file each.

``config.yaml`` is the configuration the run was started with and is never rewritten; each
resume writes its own ``config.<UTC time>.yaml``. ``history.jsonl`` gets one row per start
or resume::

    {"event": "start", "time_utc": "...", "step": 0, "config": "config.yaml",
     "fingerprint": {...}}
    {"event": "resume", "time_utc": "...", "step": 6, "config": "config.20260101T120000Z.yaml",
     "changed": {"optim.lr": [1e-06, 5e-06]}, "stated": ["optim.lr"], "fingerprint": {...}}

The last row's fingerprint is what the next resume is compared with
(:mod:`identity`); a key it lacks (one compared only since that row was written, such as
``rollout.mode``) is read from that row's config file. A directory written before this record existed has only its
``config.yaml``; its keys are compared then, the weights cannot be.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import structlog
import yaml

from lightrft.entrypoints.run_dir.directory import FIRST_CONFIG, HISTORY_FILE
from lightrft.entrypoints.run_dir.identity import Changes, Fingerprint, IdentityKeys, flatten

log = structlog.get_logger(__name__)

Event = Literal["start", "resume"]


def recorded_fingerprint(run_dir: Path, keys: IdentityKeys) -> Fingerprint | None:
    """The identity the run in ``run_dir`` was last started or resumed with; from an older
    run's ``config.yaml`` when it has no history; ``None`` when neither can be read."""
    rows = read_history(run_dir)
    if rows and isinstance(rows[-1].get("fingerprint"), dict):
        recorded = dict(rows[-1]["fingerprint"])
        config = rows[-1].get("config")
        if not isinstance(config, str):
            return recorded
        # keys compared since that row was written: the values its config file ran with
        return {**(_config_identity(Path(run_dir) / Path(config).name, keys) or {}), **recorded}
    return _config_identity(Path(run_dir) / FIRST_CONFIG, keys)


def _config_identity(path: Path, keys: IdentityKeys) -> Fingerprint | None:
    """The identity ``keys`` select from the config file at ``path``; ``None`` if unreadable."""
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    return keys.select(flatten(tree)) if isinstance(tree, dict) else None


def read_history(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``history.jsonl`` (a torn or foreign line is skipped)."""
    path = Path(run_dir) / HISTORY_FILE
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def record_start(
    run_dir: Path,
    event: Event,
    *,
    step: int,
    fingerprint: Fingerprint,
    config_text: str | None = None,
    changed: Changes | None = None,
    stated: Sequence[str] = (),
) -> dict[str, Any]:
    """Writes the config file of this start (if ``config_text``) and appends its row.

    A fresh start begins a new history (what the directory held of a start that produced
    nothing is replaced); a resume appends and writes ``config.<UTC time>.yaml``.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc)
    row: dict[str, Any] = {
        "event": event,
        "time_utc": now.isoformat(timespec="seconds"),
        "step": step,
    }
    if config_text is not None:
        name = FIRST_CONFIG if event == "start" else _free_name(run_dir, now)
        (run_dir / name).write_text(config_text, encoding="utf-8")
        row["config"] = name
    if event == "resume":
        row["changed"] = {key: [old, new] for key, (old, new) in (changed or {}).items()}
        row["stated"] = list(stated)
    row["fingerprint"] = dict(fingerprint)
    mode = "w" if event == "start" else "a"
    with open(run_dir / HISTORY_FILE, mode, encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    if row.get("changed"):
        log.warning("run.resumed_with_changes", run_dir=str(run_dir), changed=row["changed"])
    return row


def _free_name(run_dir: Path, now: datetime) -> str:
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    name, suffix = f"config.{stamp}.yaml", 1
    while (run_dir / name).exists():
        suffix += 1
        name = f"config.{stamp}-{suffix}.yaml"
    return name
