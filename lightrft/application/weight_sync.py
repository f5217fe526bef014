"""One verified weight sync: the engine loads the trainer's weights, then proves it holds them.

With ``verify`` and an engine that can digest its weights
(:class:`~lightrft.domain.weight_checksum.ChecksummedEngine`), the checksum of what the
trainer streamed (LoRA merged, cast to the engine's dtype) must equal the checksum of the
engine's tensors under the same names, or :class:`WeightSyncMismatchError` is raised: an
engine that silently generates with other weights (verl #7495: a LoRA adapter that never
reached the engine) stops the run instead of masquerading as staleness. Engines that share
the policy's module hold the trainer's tensors themselves; engines that cannot digest their
weights (vLLM, SGLang) are logged once as unverified.
"""

from __future__ import annotations

import structlog

from lightrft.domain.async_errors import WeightSyncMismatchError
from lightrft.domain.ports import NamedTensors, RolloutEngine
from lightrft.domain.weight_checksum import ChecksummedEngine, DigestingStream

log = structlog.get_logger(__name__)
_warned: set[str] = set()


def sync_engine_weights(
    engine: RolloutEngine, weights: NamedTensors, version: int, *, verify: bool
) -> str | None:
    """Loads ``weights`` (policy ``version``) into ``engine``; returns the verified
    checksum, or ``None`` when nothing was verified."""
    checkable = verify and not engine.shares_policy_weights
    if not checkable or not isinstance(engine, ChecksummedEngine):
        if checkable and type(engine).__name__ not in _warned:
            _warned.add(type(engine).__name__)
            log.warning("weight_sync.unverified", engine=type(engine).__name__)
        engine.load_weights(weights)
        return None
    stream = DigestingStream(weights, engine.weights_dtype)
    engine.load_weights(stream)
    sent = stream.checksum()
    held = engine.weights_checksum(stream.names)
    if held != sent:
        raise WeightSyncMismatchError(version, sent, held)
    log.debug("weight_sync.verified", version=version, checksum=sent)
    return sent
