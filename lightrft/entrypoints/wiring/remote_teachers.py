"""A served teacher (``teacher.url`` / ``teacher.models[].url``): its client, after checking
that the server's tokenizer is the student's (the student's token ids go out as they are)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightrft.adapters.hf.tokenizer_match import check_same_tokenizer
from lightrft.adapters.remote_teacher import RemoteTeacher
from lightrft.entrypoints.config.teacher_section import TeacherModelConfig


def build_remote_teacher(
    teacher: TeacherModelConfig,
    student_tokenizer: Any,
    student_path: str,
    load_tokenizer: Callable[[Path], Any],
    seed: int | None = None,
) -> RemoteTeacher:
    """The client of ``teacher.url``. The teacher's tokenizer is ``teacher.tokenizer`` or the
    model path the server reports; ValueError when it differs from the student's (naming
    both) or when neither is a directory here."""
    client = RemoteTeacher(
        str(teacher.url),
        timeout_s=teacher.timeout_s,
        max_attempts=teacher.max_attempts,
        request_batch=teacher.request_batch,
        seed=seed,
    )
    where = teacher.tokenizer or client.model_path()
    if where is None or not Path(where).is_dir():
        client.close()
        reported = "reports no model path" if where is None else f"reports model path {where}"
        raise ValueError(
            f"teacher {teacher.url} {reported}, not a directory here, so its tokenizer cannot "
            "be checked against the student's: set the teacher's tokenizer "
            "(teacher.models[i].tokenizer=DIR) to a copy of it"
        )
    check_same_tokenizer(
        student_tokenizer, load_tokenizer(Path(where)), student_path, f"{teacher.url} ({where})"
    )
    return client
