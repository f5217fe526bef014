"""One JSON POST over httpx, shared by the HTTP client adapters (the remote reward source,
the HTTP environment) for :class:`~lightrft.adapters.http_client.retry.JsonPoster`:
timeouts, connection errors, 5xx and 429 are retryable, other HTTP errors and bodies that
are not JSON are not. With ``max_body_bytes`` an answer is read while it streams in and
refused (not retried) as soon as it passes that size."""

from __future__ import annotations

from typing import Any

import httpx

from lightrft.adapters.http_client.retry import RETRY_STATUS, CallFailed, Retryable, Send


def httpx_send(client: httpx.Client, what: str, max_body_bytes: int | None = None) -> Send:
    """The ``send`` of ``client``; errors name ``what`` (e.g. "reward service") and the URL."""

    def send(url: str, payload: Any) -> Any:
        base = url.rsplit("/", 1)[0]
        try:
            if max_body_bytes is None:
                response = client.post(url, json=payload)
            else:
                response = _capped_post(client, url, payload, max_body_bytes, f"{what} {base}")
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


def _capped_post(
    client: httpx.Client, url: str, payload: Any, limit: int, where: str
) -> httpx.Response:
    """The answer to a POST, read up to ``limit`` bytes; CallFailed beyond."""
    with client.stream("POST", url, json=payload) as streamed:
        declared = streamed.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise CallFailed(f"{where} sent an answer of {declared} bytes, over {limit}")
        chunks: list[bytes] = []
        size = 0
        for chunk in streamed.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise CallFailed(f"{where} sent an answer of more than {limit} bytes")
            chunks.append(chunk)
        headers = [(k, v) for k, v in streamed.headers.items() if k != "content-encoding"]
        return httpx.Response(
            streamed.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=streamed.request,
        )


def response_detail(response: httpx.Response) -> str:
    """One line of an error response (its JSON ``detail`` or text), at most 200 chars."""
    try:
        body = response.json()
    except ValueError:
        text = response.text
    else:
        text = str(body.get("detail", body) if isinstance(body, dict) else body)
    return " ".join(text.split())[:200]  # one line, even of an HTML error page
