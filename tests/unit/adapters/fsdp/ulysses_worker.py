"""One rank of the Ulysses test (``run_rank`` in a fresh process, gloo, 2 ranks).

Part 1, replicated weights: the sequence-parallel forward's log-probs and entropies, the
activation bytes autograd saved, and the gradient summed over the two ranks.
Part 2, FSDP2 with ``sequence_parallel_size=2``: one optimizer step, then the full state.
Results land in OUT as ``rank<r>.pt``.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as dist

from lightrft.adapters.fsdp import Fsdp2Strategy
from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.sequence_parallel import (
    SequenceParallelPolicy,
    sequence_parallel_groups,
    sequence_parallel_logprobs,
)
from tests.unit.adapters.fsdp.ulysses_case import (
    OPTIM,
    long_batch,
    long_model,
    saved_activation_bytes,
    sp_loss,
)


def run_rank(rank: int, world_size: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    sp, _ = sequence_parallel_groups(2)
    batch = long_batch()
    model = long_model()
    result, saved = saved_activation_bytes(
        model, lambda: sequence_parallel_logprobs(model, batch, sp, with_entropy=True)
    )
    assert result.entropy is not None
    sp_loss(result.logprobs, result.entropy, batch).backward()
    grad = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    dist.all_reduce(grad)
    record: dict[str, object] = {
        "logprobs": result.logprobs.detach(),
        "entropy": result.entropy.detach(),
        "grad": grad,
        "saved_bytes": saved,
    }
    strategy = Fsdp2Strategy(OPTIM, device=torch.device("cpu"), sequence_parallel_size=2)
    fresh = long_model()
    strategy.prepare(fresh)
    policy = SequenceParallelPolicy(HfPolicy(fresh), sp)
    step_out = policy.forward(batch, with_entropy=True)
    assert step_out.entropy is not None
    strategy.backward(sp_loss(step_out.logprobs, step_out.entropy, batch))
    record["step"] = strategy.step()
    record["final"] = {name: t.clone() for name, t in strategy.full_state()}
    torch.save(record, Path(out) / f"rank{rank}.pt")
    dist.destroy_process_group()
