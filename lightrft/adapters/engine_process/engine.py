"""``ProcessRolloutEngine``: the ``RolloutEngine`` port over a pipe to a child process.

The child (``worker.serve``) builds the engine from ``factory`` (a picklable callable: a
module-level function or ``functools.partial``; the process is spawned, so the factory
runs in a fresh interpreter) and uses ``threads`` torch threads (default: as many as this
process; another count changes float rounding in the engine's kernels, so its log-probs
then differ from an in-process engine's in the last bits), with ``env`` added to its
environment before the factory runs (e.g. a device-visibility variable: the factory and
what it unpickles must not start a device runtime before that). Each call waits for its
reply at most its deadline (``call_timeout_s``; ``weight_timeout_s`` for ``load_weights``;
``start_timeout_s`` for the start) and then raises
:class:`~lightrft.domain.async_errors.DeadlineExceededError` naming the call; a child that
exits raises :class:`EngineProcessDiedError` with its exit code. An error inside the child
is raised here as ``RuntimeError`` with the child's traceback. Calls from several threads
are serialized.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.multiprocessing as mp

from lightrft.adapters.engine_process.worker import serve
from lightrft.domain.async_errors import DeadlineExceededError, ProducerDiedError
from lightrft.domain.partial_rollout import ChunkProgress
from lightrft.domain.ports import NamedTensors, RolloutEngine
from lightrft.domain.types import Completion, PromptRecord, SamplingParams

POLL_S = 0.05  # how often a waiting call checks that the child is alive


class EngineProcessDiedError(ProducerDiedError):
    """The engine's process exited (crashed, was killed, ran out of memory)."""


class ProcessRolloutEngine:
    """See the module docstring."""

    def __init__(
        self,
        factory: Callable[[], RolloutEngine],
        *,
        threads: int | None = None,
        start_timeout_s: float = 300.0,
        call_timeout_s: float = 1800.0,
        weight_timeout_s: float = 600.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        context = mp.get_context("spawn")
        self._conn, child = context.Pipe()
        threads = threads or torch.get_num_threads()
        self._process = context.Process(
            target=serve,
            args=(factory, child, threads, dict(env or {})),
            name="lightrft-engine",
            daemon=True,
        )
        self._lock = threading.Lock()
        self._call_timeout_s, self._weight_timeout_s = call_timeout_s, weight_timeout_s
        self._process.start()
        child.close()
        self._properties: dict[str, Any] = self._reply("start", start_timeout_s)
        self.weight_syncs = 0

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self._process.pid

    # -- the RolloutEngine port ---------------------------------------------------------

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt, generated in the child."""
        result: list[Completion] = self._call("generate", list(prompts), sampling)
        return result

    def load_weights(self, weights: NamedTensors) -> None:
        """Ships the named tensors (contiguous CPU copies) to the child, which loads them."""
        shipped = [(name, t.detach().to("cpu").contiguous()) for name, t in weights]
        self._call("load_weights", shipped, timeout_s=self._weight_timeout_s)
        self.weight_syncs += 1

    def sleep(self) -> None:
        self._call("sleep")
        self._properties["is_awake"] = False

    def wake_up(self) -> None:
        self._call("wake_up")
        self._properties["is_awake"] = True

    @property
    def is_awake(self) -> bool:
        return bool(self._properties["is_awake"])

    @property
    def shares_policy_weights(self) -> bool:
        """Never: the child holds its own copy."""
        return False

    # -- partial rollouts (ResumableEngine, when the child's engine is one) -------------

    @property
    def can_resume(self) -> bool:
        """Whether the child's engine can pause and resume a generation."""
        return bool(self._properties["can_resume"])

    def begin_generation(self, prompts: Sequence[PromptRecord], sampling: SamplingParams) -> None:
        self._call("begin_generation", list(prompts), sampling)

    def continue_generation(self, max_new_tokens: int) -> ChunkProgress:
        progress: ChunkProgress = self._call("continue_generation", max_new_tokens)
        return progress

    def finish_generation(self) -> list[Completion]:
        result: list[Completion] = self._call("finish_generation")
        return result

    # -- verification -------------------------------------------------------------------

    @property
    def weights_dtype(self) -> torch.dtype | None:
        """The child engine's weight dtype (``None`` when it cannot digest its weights)."""
        dtype: torch.dtype | None = self._properties["weights_dtype"]
        return dtype

    def weights_checksum(self, names: Sequence[str]) -> str:
        """The child engine's checksum of its weights under ``names``."""
        if not self._properties["checksummed"]:
            raise NotImplementedError("the engine in the child process cannot digest its weights")
        checksum: str = self._call("weights_checksum", list(names))
        return checksum

    # -- lifecycle ----------------------------------------------------------------------

    def close(self, timeout_s: float = 30.0) -> None:
        """Asks the child to exit; kills it when it does not within ``timeout_s``. A call in
        flight from another thread (a stuck ``generate``) is not waited for beyond
        ``timeout_s``: the child is killed, and that call ends in
        :class:`EngineProcessDiedError`."""
        if self._process.is_alive() and self._lock.acquire(timeout=timeout_s):
            try:
                self._conn.send(("close", ()))
                self._reply("close", timeout_s)
            except (DeadlineExceededError, ProducerDiedError, ConnectionError, OSError):
                pass  # killed below
            finally:
                self._lock.release()
        if self._process.is_alive():
            self._process.join(timeout_s)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout_s)
        self._conn.close()

    def _call(self, method: str, *args: Any, timeout_s: float | None = None) -> Any:
        with self._lock:
            if not self._process.is_alive():
                raise self._died(method)
            try:
                self._conn.send((method, args))
            except ConnectionError as error:  # BrokenPipeError, ConnectionResetError
                raise self._died(method) from error
            return self._reply(method, timeout_s or self._call_timeout_s)

    def _reply(self, method: str, timeout_s: float) -> Any:
        start = time.monotonic()
        while not self._poll(method, POLL_S):
            if not self._process.is_alive() and not self._poll(method, 0):
                raise self._died(method)
            if time.monotonic() - start > timeout_s:
                raise DeadlineExceededError(
                    f"the engine process (pid {self.pid}) to answer {method}()",
                    time.monotonic() - start,
                )
        try:
            reply = self._conn.recv()
        except (EOFError, ConnectionError) as error:  # the pipe broke: the child is gone
            raise self._died(method) from error
        if reply[0] == "error":
            _, kind, message, trace = reply
            raise RuntimeError(
                f"the engine process failed in {method}(): {kind}: {message}\n{trace}"
            )
        return reply[1]

    def _poll(self, method: str, timeout_s: float) -> bool:
        try:
            return self._conn.poll(timeout_s)
        except (EOFError, ConnectionError) as error:
            raise self._died(method) from error

    def _died(self, method: str) -> EngineProcessDiedError:
        self._process.join(1.0)
        return EngineProcessDiedError(
            f"the engine process (pid {self.pid}) exited with code {self._process.exitcode} "
            f"during {method}()"
        )
