"""A reward source served over HTTP (FastAPI + uvicorn) and the client that scores with it.

``fastapi``/``uvicorn`` (server) and ``httpx`` (client) come with ``pip install
'lightrft[serve]'``; importing this package without them raises ``ImportError``.
"""

from lightrft.adapters.reward_service.client import RemoteRewardError, RemoteRewardSource
from lightrft.adapters.reward_service.server import BackgroundServer, create_app, serve

__all__ = ["BackgroundServer", "RemoteRewardError", "RemoteRewardSource", "create_app", "serve"]
