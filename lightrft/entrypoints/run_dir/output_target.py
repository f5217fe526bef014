"""Where a verb may write a directory of its own output (``checkpoints export --out``), or a
file (``rm rejection-sample --out``): never into a run directory, never over a directory
that holds something unless told.

:func:`check_output_directory` refuses, in one line naming both paths, an output that is a
run directory, lies inside one, or holds one (replacing it would replace the run: its
config, metrics, history and checkpoints); a run directory is one with a lock file or a
``history.jsonl`` (every run writes both). An output that exists and is not empty is refused
unless ``force``: then :func:`~directory.set_aside_path` names where the old contents go
(``OUT.old-<UTC time>``; nothing is deleted).
"""

from __future__ import annotations

from pathlib import Path

from lightrft.entrypoints.run_dir.directory import HISTORY_FILE, LOCK_FILE, RunDirectoryError

RUN_MARKERS = (LOCK_FILE, HISTORY_FILE)


def is_run_directory(path: Path) -> bool:
    """Whether ``path`` is (or was) a lightrft run directory."""
    return any((path / marker).exists() for marker in RUN_MARKERS)


def check_output_directory(out: Path, run_dir: Path, flag: str, *, force: bool) -> bool:
    """Refuses ``out`` as the output of a job that reads ``run_dir`` (see the module
    docstring; ``flag`` names the option in messages). Returns whether ``out`` holds
    something that ``force`` allows to be moved aside."""
    target, run = out.resolve(), run_dir.resolve()
    advice = f"choose a directory outside it, e.g. {run.parent / (run.name + '-export')}"
    if target == run or run in target.parents:
        where = "is the run directory" if target == run else "is inside the run directory"
        raise RunDirectoryError(
            f"{flag} {out} {where} {run_dir}: writing there would replace the run's files; "
            + advice
        )
    if target in run.parents:
        raise RunDirectoryError(
            f"{flag} {out} holds the run directory {run_dir}: writing there would replace the "
            "run; " + advice
        )
    for place in (target, *target.parents):
        if place.is_dir() and is_run_directory(place):
            raise RunDirectoryError(
                f"{flag} {out} is {'a' if place == target else 'inside a'} run directory "
                f"({place}): writing there would replace that run's files; choose a directory "
                "outside every run directory"
            )
    if target.exists() and not target.is_dir():
        raise RunDirectoryError(f"{flag} {out} is a file, not a directory; choose a directory")
    occupied = target.is_dir() and any(target.iterdir())
    if occupied and not force:
        raise RunDirectoryError(
            f"{flag} {out} is not empty; choose a new or empty directory, or pass --force to "
            f"move what it holds aside to {out.name}.old-<UTC time> (nothing is deleted)"
        )
    return occupied


def check_output_file(out: Path, flag: str, *, run_dir: Path | None = None) -> None:
    """Refuses ``out``, a file a job writes (with files beside it), inside a run directory
    (one with the run markers, or ``run_dir``: the run the job starts next, which would then
    hold files no run wrote), naming both paths."""
    target = out.resolve()
    for place in target.parents:
        if (run_dir is not None and place == run_dir.resolve()) or (
            place.is_dir() and is_run_directory(place)
        ):
            raise RunDirectoryError(
                f"{flag} {out} is inside the run directory {place}: writing there would mix "
                "this job's files into that run's; choose a path outside every run directory"
            )
    if target.is_dir():
        raise RunDirectoryError(f"{flag} {out} is a directory; expected a file path")
