"""Reward servers of other frameworks, as ``remote`` reward sources: OpenRLHF's
``--remote_rm_url`` protocol and the original LightRFT's (:mod:`wire_formats`), over the
shared remote-source base with its deadlines, retries and token header (:mod:`peer_remote`)."""

from lightrft.adapters.reward_parts.remote_source import RemoteScoringError
from lightrft.adapters.reward_protocols.peer_remote import PeerRemoteRewardSource
from lightrft.adapters.reward_protocols.wire_formats import WIRE_FORMATS, WireFormat

__all__ = ["WIRE_FORMATS", "PeerRemoteRewardSource", "RemoteScoringError", "WireFormat"]
