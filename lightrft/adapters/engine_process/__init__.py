"""A rollout engine in its own process (the split placement on one machine).

:class:`ProcessRolloutEngine` implements the ``RolloutEngine`` port by forwarding every call
over a pipe to a child process that builds the real engine (HF, fake, ...) from a picklable
factory and runs it with its own torch threads. Weights travel as named tensors (shared
memory through ``torch.multiprocessing``). Every call has a deadline; a dead child raises
:class:`EngineProcessDiedError` naming its exit code.
"""

from lightrft.adapters.engine_process.engine import EngineProcessDiedError, ProcessRolloutEngine

__all__ = ["EngineProcessDiedError", "ProcessRolloutEngine"]
