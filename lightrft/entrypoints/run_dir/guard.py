"""The one run-directory guard of every verb that writes a run (``train``, ``demo``, ``sft``,
``rm train``, ``demo rlhf``).

:func:`guard_run_directory` takes the directory's lock on rank 0 for the whole run, decides
fresh / resume / refuse (:func:`~lightrft.entrypoints.run_dir.directory.decide_start`), checks on
a resume that the run's identity did not change (:mod:`identity`), and tells the other
ranks the decision (or that rank 0 refused). After the (possibly resumed) state is loaded,
:meth:`RunStart.record` writes the start into the run's history (:mod:`history`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import structlog
import torch

from lightrft.domain.ports import Collective
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import dump_config
from lightrft.entrypoints.run_dir.directory import (
    ResumeChoice,
    RunDirectoryError,
    RunDirectoryLock,
    Start,
    decide_start,
)
from lightrft.entrypoints.run_dir.history import record_start, recorded_fingerprint
from lightrft.entrypoints.run_dir.identity import (
    Changes,
    Fingerprint,
    IdentityKeys,
    check_resume,
    check_stated_keys,
    fingerprint,
    flatten,
)
from lightrft.entrypoints.run_dir.run_kind import check_same_kind

log = structlog.get_logger(__name__)

_CODES: dict[Start, float] = {"fresh": 1.0, "resume": 2.0}


@dataclass(frozen=True)
class RunRequest:
    """How a verb asks for its run directory.

    ``fingerprint`` is called on rank 0 only (it hashes the model weights); ``keys`` says
    which configuration keys it compares, ``resume_changing`` the ones the user allows to
    differ on a resume.
    """

    run_dir: Path
    resume: ResumeChoice
    overwrite: bool
    keys: IdentityKeys
    fingerprint: Callable[[], Fingerprint]
    resume_changing: tuple[str, ...] = ()


NOT_RESUMED = IdentityKeys(include=())
"""The identity of a run that is never resumed (a demo starts over): nothing is compared."""


def fresh_run_request(run_dir: Path, overwrite: bool) -> RunRequest:
    """The request of a multi-stage demo's outer directory (``demo rlhf``, ``demo agent``):
    never resumed; a previous run there is refused, or moved aside on ``overwrite``."""
    return RunRequest(
        run_dir, resume=False, overwrite=overwrite, keys=NOT_RESUMED, fingerprint=dict
    )


def config_request(config: RunConfig, keys: IdentityKeys) -> RunRequest:
    """The request of a verb run from a :class:`RunConfig` (``train``, ``demo``, ``sft``):
    ``logging.run_dir``, ``checkpoint.resume`` / ``resume_changing``, ``logging.overwrite``;
    the identity is the config's ``keys`` and the weights at the model path."""
    from lightrft.entrypoints.wiring import models  # the model path (the default: embedded)

    def identity() -> Fingerprint:
        flat = flatten(config.model_dump(mode="json"))
        return fingerprint(flat, keys, models.model_path(config))

    return RunRequest(
        run_dir=Path(config.logging.run_dir),
        resume=config.checkpoint.resume,
        overwrite=config.logging.overwrite,
        keys=keys,
        fingerprint=identity,
        resume_changing=tuple(config.checkpoint.resume_changing),
    )


def recorded_config_text(config: RunConfig) -> str:
    """The config file a start or resume records: the run's settings without this command's
    start actions (``logging.overwrite``, ``checkpoint.resume`` / ``resume_changing`` as
    their defaults), so the file continues the run as it is:
    ``lightrft train ALGO --config RUN/config.yaml --resume`` (a recorded
    ``overwrite: true`` would contradict ``--resume``)."""
    neutral = config.model_copy(
        update={
            "logging": config.logging.model_copy(update={"overwrite": False}),
            "checkpoint": config.checkpoint.model_copy(
                update={"resume": False, "resume_changing": []}
            ),
        }
    )
    return dump_config(neutral)


@dataclass(frozen=True)
class RunStart:
    """The decision: ``start``; on rank 0 also the identity and what a resume changes."""

    run_dir: Path
    start: Start
    fingerprint: Fingerprint | None = None
    changed: Changes = field(default_factory=dict)
    stated: tuple[str, ...] = ()

    @property
    def resumes(self) -> bool:
        return self.start == "resume"

    def record(self, step: int, config_text: str | None = None) -> None:
        """Rank 0: writes this start (its config file and ``history.jsonl`` row); the other
        ranks do nothing."""
        if self.fingerprint is None:
            return
        record_start(
            self.run_dir,
            "resume" if self.resumes else "start",
            step=step,
            fingerprint=self.fingerprint,
            config_text=config_text,
            changed=self.changed,
            stated=self.stated,
        )


@contextmanager
def guard_run_directory(
    request: RunRequest, collective: Collective | None = None
) -> Iterator[RunStart]:
    """Holds the run directory (rank 0) while the body runs; yields the agreed start.

    Raises :class:`RunDirectoryError` (on every rank) when the directory cannot be used as
    asked; the message says what to do instead.
    """
    main = collective is None or collective.rank == 0
    with ExitStack() as stack:
        if main:
            stack.enter_context(RunDirectoryLock(request.run_dir))
        yield _agree(request, collective)


def _agree(request: RunRequest, collective: Collective | None) -> RunStart:
    """Rank 0 decides; the other ranks learn its decision, or that it failed (whatever the
    error, rank 0 joins the all-reduce first, so no rank waits for it forever)."""
    decided: RunStart | None = None
    failure: Exception | None = None
    if collective is None or collective.rank == 0:
        try:
            decided = decide(request)
        except Exception as exc:  # re-raised below, after the other ranks were told
            failure = exc
    if collective is not None and collective.world_size > 1:
        code = _CODES[decided.start] if decided is not None else 0.0  # rank 0 only decides
        agreed = int(collective.all_reduce_sum(torch.tensor([code], dtype=torch.float64)))
        if agreed == 0 and failure is None:
            failure = RunDirectoryError(
                f"rank 0 refused run directory {request.run_dir}: see its log"
            )
        if decided is None and failure is None:
            decided = RunStart(request.run_dir, "resume" if agreed == 2 else "fresh")
    if failure is not None:
        raise failure
    assert decided is not None
    return decided


def decide(request: RunRequest) -> RunStart:
    """Rank 0's decision: fresh or resume (moving a previous run aside when asked), and on
    a resume the identity check against the run's record."""
    current = request.fingerprint()
    check_stated_keys(request.resume_changing, current, request.keys)  # before moving anything
    start = decide_start(request.run_dir, request.resume, request.overwrite)
    if start == "fresh":
        return RunStart(request.run_dir, start, current)
    check_same_kind(request.run_dir, request.keys)  # before any model loads
    recorded = recorded_fingerprint(request.run_dir, request.keys)
    if recorded is None:
        log.warning(
            "run.identity_unrecorded",
            run_dir=str(request.run_dir),
            reason="no history.jsonl or config.yaml: the run's identity is not checked",
        )
        return RunStart(request.run_dir, start, current, stated=request.resume_changing)
    changed = check_resume(request.run_dir, recorded, current, request.resume_changing)
    return RunStart(request.run_dir, start, current, changed, request.resume_changing)
