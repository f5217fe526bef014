"""The child side of :class:`~lightrft.adapters.engine_process.engine.ProcessRolloutEngine`:
builds the engine, then answers ``(method, args)`` requests until ``close``.

Replies are ``("ok", result)`` or ``("error", type name, message, traceback text)``.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any

import torch

from lightrft.domain.ports import RolloutEngine

CALLS = frozenset(
    {
        *("generate", "load_weights", "sleep", "wake_up", "weights_checksum"),
        *("begin_generation", "continue_generation", "finish_generation"),
        *("properties", "close"),
    }
)


def _properties(engine: RolloutEngine) -> dict[str, Any]:
    checksummed = callable(getattr(engine, "weights_checksum", None))
    return {
        "is_awake": engine.is_awake,
        "can_resume": bool(getattr(engine, "can_resume", False)),
        "checksummed": checksummed,
        "weights_dtype": getattr(engine, "weights_dtype", None) if checksummed else None,
    }


def serve(
    factory: Callable[[], RolloutEngine],
    conn: Connection,
    threads: int,
    env: Mapping[str, str] | None = None,
) -> None:
    """Runs in the child process: sets ``env`` in its environment, then builds the engine
    (``factory()``) and answers one request at a time."""
    os.environ.update(env or {})
    torch.set_num_threads(threads)
    try:
        engine = factory()
    except BaseException as error:  # reported to the parent, then the child ends
        conn.send(("error", type(error).__name__, str(error), traceback.format_exc()))
        return
    conn.send(("ok", _properties(engine)))
    while True:
        try:
            method, args = conn.recv()
        except EOFError:  # the parent is gone
            return
        try:
            if method not in CALLS:
                raise ValueError(f"unknown engine call {method!r}")
            if method == "close":
                conn.send(("ok", None))
                return
            if method == "properties":
                result: Any = _properties(engine)
            else:
                result = getattr(engine, method)(*args)
            conn.send(("ok", result))
        except BaseException as error:
            conn.send(("error", type(error).__name__, str(error), traceback.format_exc()))
