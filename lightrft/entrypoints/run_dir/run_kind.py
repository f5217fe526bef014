"""Which verb a run directory's run belongs to, so that one verb never resumes another's run
(``lightrft sft --resume`` on a GRPO run ended in ``KeyError: 'strategy'`` after the model
loaded: the checkpoints hold another trainer's state).

A run's kind is read from the last ``history.jsonl`` row's fingerprint: each verb's identity
compares keys only it has (``algorithm.*`` for RL, ``sft.*`` for SFT, ``heads.*`` for reward
models), so the check holds for runs recorded before it existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightrft.entrypoints.run_dir.history import read_history
from lightrft.entrypoints.run_dir.identity import (
    RL_IDENTITY,
    RM_IDENTITY,
    SFT_IDENTITY,
    IdentityKeys,
    ResumeIdentityError,
)


@dataclass(frozen=True)
class RunKind:
    """A verb's runs: the identity it compares, a key prefix only its fingerprint holds."""

    keys: IdentityKeys
    marker: str
    name: str
    verb: str


KINDS = (
    RunKind(RL_IDENTITY, "algorithm.", "an RL run", "lightrft train / lightrft demo"),
    RunKind(SFT_IDENTITY, "sft.", "an SFT run", "lightrft sft"),
    RunKind(RM_IDENTITY, "heads.", "a reward-model run", "lightrft rm train"),
)


def kind_of(fingerprint: Mapping[str, Any]) -> RunKind | None:
    """The kind whose marker keys ``fingerprint`` holds; None when none (or several) match."""
    found = [k for k in KINDS if any(key.startswith(k.marker) for key in fingerprint)]
    return found[0] if len(found) == 1 else None


def check_same_kind(run_dir: Path, keys: IdentityKeys) -> None:
    """Raises :class:`ResumeIdentityError` when ``run_dir``'s run was started by a verb of
    another kind than the one resuming it with ``keys``; nothing when either is unknown."""
    resuming = next((k for k in KINDS if k.keys == keys), None)
    rows = read_history(run_dir)
    last = rows[-1].get("fingerprint") if rows else None
    recorded = kind_of(last) if isinstance(last, dict) else None
    if resuming is None or recorded is None or recorded == resuming:
        return
    raise ResumeIdentityError(
        f"cannot resume {run_dir} with {resuming.verb}: it holds {recorded.name} (started by "
        f"{recorded.verb}), whose checkpoints {resuming.name} cannot continue. Resume it with "
        f"{recorded.verb}, choose another run directory, or pass --overwrite to move it "
        f"aside and start {resuming.name} there"
    )
