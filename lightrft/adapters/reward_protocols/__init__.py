"""Reward servers of other frameworks, as ``remote`` reward sources: OpenRLHF's
``--remote_rm_url`` protocol and the original LightRFT's (:mod:`wire_formats`), over the
shared remote-source base with its deadlines, retries and token header (:mod:`peer_remote`);
the same formats read from the server's end, answered by ``serve-reward`` on
``SERVED_PATHS``."""

from lightrft.adapters.http_client.remote_source import RemoteScoringError
from lightrft.adapters.reward_protocols.peer_remote import PeerRemoteRewardSource
from lightrft.adapters.reward_protocols.wire_formats import (
    SERVED_PATHS,
    WIRE_FORMATS,
    PeerRequest,
    WireFormat,
)

__all__ = [
    "SERVED_PATHS",
    "WIRE_FORMATS",
    "PeerRemoteRewardSource",
    "PeerRequest",
    "RemoteScoringError",
    "WireFormat",
]
