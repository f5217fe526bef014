"""The client side of the HTTP calls of the remote reward source and the HTTP environment:
retries with backoff and typed errors (:mod:`~lightrft.adapters.http_client.retry`, standard
library only), one JSON POST over httpx (:mod:`~lightrft.adapters.http_client.json_post`),
and the base of the reward sources that score over HTTP in batched requests
(:mod:`~lightrft.adapters.http_client.remote_source`)."""
