"""One JSON POST over httpx, shared by the HTTP client adapters (the remote reward source,
the HTTP environment) for :class:`~lightrft.adapters.http_client.retry.JsonPoster`:
timeouts, connection errors, 5xx and 429 are retryable, other HTTP errors and bodies that
are not JSON are not."""

from __future__ import annotations

from typing import Any

import httpx

from lightrft.adapters.http_client.retry import RETRY_STATUS, CallFailed, Retryable, Send


def httpx_send(client: httpx.Client, what: str) -> Send:
    """The ``send`` of ``client``; errors name ``what`` (e.g. "reward service") and the URL."""

    def send(url: str, payload: Any) -> Any:
        base = url.rsplit("/", 1)[0]
        try:
            response = client.post(url, json=payload)
        except httpx.TimeoutException as error:
            raise Retryable(f"timed out ({type(error).__name__})") from None
        except httpx.TransportError as error:
            raise Retryable(f"cannot reach it ({type(error).__name__}: {error})") from None
        if response.status_code in RETRY_STATUS:
            raise Retryable(f"HTTP {response.status_code}: {response_detail(response)}")
        if response.status_code != 200:
            raise CallFailed(
                f"{what} {base} refused the request: HTTP {response.status_code}: "
                f"{response_detail(response)}"
            )
        try:
            return response.json()
        except ValueError:
            raise CallFailed(f"{what} {base} sent a body that is not JSON") from None

    return send


def response_detail(response: httpx.Response) -> str:
    """One line of an error response (its JSON ``detail`` or text), at most 200 chars."""
    try:
        body = response.json()
    except ValueError:
        text = response.text
    else:
        text = str(body.get("detail", body) if isinstance(body, dict) else body)
    return " ".join(text.split())[:200]  # one line, even of an HTML error page
