"""Parts of the reward sources shared by the reward adapters (rule rewards, reward models, the
reward-service client, the peer-protocol clients, the fakes): the source bases
(:mod:`source_bases`, domain and standard library only), the base of the sources that ask a
server over HTTP (:mod:`remote_source`, over :mod:`lightrft.adapters.http_client`), and
OpenRLHF's reward answer (:mod:`openrlhf_rewards`, standard library only)."""
