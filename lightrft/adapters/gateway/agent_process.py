"""Agent programs as processes: one per episode, in a process group of its own, killed as a
group at the episode's deadline.

The program is a command (``["python", "agent.py"]``) or a Python callable
``"package.module:function"`` (run in a fresh interpreter by
:mod:`lightrft.adapters.gateway.run_callable`, so it can be killed too). Its environment is
the trainer's plus:

- ``OPENAI_BASE_URL`` (``http://127.0.0.1:<port>/v1``), ``OPENAI_API_KEY`` (the episode's
  token), ``OPENAI_MODEL`` (the served model's name);
- ``LIGHTRFT_TASK``: the task as JSON (``uid``, ``sample``, ``prompt``: the data row's
  prompt, a string or chat messages; ``reference`` with ``pass_reference``);
- ``LIGHTRFT_REWARD_FILE``: where it may write its reward (a number) before it exits;
- ``LIGHTRFT_EPISODE``: the episode's name.

Its standard output and error go to a log file in the rollout's work directory; the last
lines are shown when it fails.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from lightrft.domain.gateway_calls import AgentLaunch

TAIL_BYTES = 2000


class AgentProgram:
    """The :class:`~lightrft.domain.gateway_calls.AgentProcess` port over a ``Popen``."""

    def __init__(self, process: subprocess.Popen[bytes], reward_file: Path, log_file: Path):
        self.process, self.reward_file, self.log_file = process, reward_file, log_file

    def poll(self) -> int | None:
        """Its exit status, or ``None`` while it runs."""
        return self.process.poll()

    def kill(self) -> None:
        """SIGKILL to its process group, then waits for it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kernel that ignores SIGKILL
            pass

    def reward_from_file(self) -> float | None:
        """The finite number in its reward file, else ``None``."""
        try:
            value = float(self.reward_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return value if math.isfinite(value) else None

    def log_tail(self) -> str:
        """The end of what it printed."""
        try:
            data = self.log_file.read_bytes()
        except OSError:
            return ""
        return data[-TAIL_BYTES:].decode("utf-8", "replace")


class SubprocessAgentLauncher:
    """The :class:`~lightrft.domain.gateway_calls.AgentLauncher` port: starts ``command`` or
    the Python ``function`` (``"module:function"``), exactly one of them, in ``work_dir``."""

    def __init__(
        self,
        work_dir: Path,
        *,
        command: Sequence[str] | None = None,
        function: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if (command is None) == (function is None):
            raise ValueError("give the agent program as a command or as a function, not both")
        self.work_dir = work_dir
        self.argv = (
            list(command)
            if command is not None
            else [sys.executable, "-m", "lightrft.adapters.gateway.run_callable", str(function)]
        )
        self.env = dict(env or {})

    def start(self, launch: AgentLaunch) -> AgentProgram:
        """Starts the program for one episode (raises ``OSError`` when it cannot)."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        reward_file = self.work_dir / launch.reward_file
        reward_file.unlink(missing_ok=True)
        log_file = reward_file.with_suffix(".log")
        env = {
            **os.environ,
            **self.env,
            "OPENAI_BASE_URL": launch.base_url,
            "OPENAI_API_KEY": launch.token,
            "OPENAI_MODEL": launch.model,
            "LIGHTRFT_TASK": json.dumps(dict(launch.task)),
            "LIGHTRFT_REWARD_FILE": str(reward_file),
            "LIGHTRFT_EPISODE": launch.episode,
        }
        with log_file.open("wb") as log:
            process = subprocess.Popen(
                self.argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed as one
            )
        return AgentProgram(process, reward_file, log_file)
