"""Agent programs for the rollout-gateway tests: plain HTTP clients of the OpenAI protocol
(httpx only), run as ``module:function`` callables in processes of their own."""

from __future__ import annotations

import os
from typing import Any

import httpx


def _post(path: str, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    token = os.environ["OPENAI_API_KEY"] if token is None else token
    return httpx.post(
        os.environ["OPENAI_BASE_URL"] + path,
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def _chat(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    response = _post("/chat/completions", {"model": "m", "messages": messages, **extra})
    response.raise_for_status()
    return response.json()


def continuing(task: dict[str, Any]) -> None:
    """Three calls keeping the history as sent; reports 0.75 over HTTP."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task["prompt"]}]
    for turn in range(3):
        message = _chat(messages, max_tokens=3)["choices"][0]["message"]
        messages += [message, {"role": "tool", "tool_call_id": "t", "content": str(turn + 1) * 2}]
    _post("/episodes/reward", {"reward": 0.75}).raise_for_status()


def rewriting(task: dict[str, Any]) -> float:
    """Two calls, the second on a rewritten history; returns 0.5 (the reward file)."""
    first = _chat([{"role": "user", "content": task["prompt"]}], max_tokens=3)
    edited = {"role": "assistant", "content": "12"}  # not what the model said
    assert first["choices"][0]["message"]["role"] == "assistant"
    messages = [{"role": "user", "content": "9" + task["prompt"]}, edited]
    _chat([*messages, {"role": "user", "content": "3"}], max_tokens=3)
    return 0.5


def probing(task: dict[str, Any]) -> None:
    """Checks what a wrong token gets, then makes one call; exits 3 if anything is off."""
    assert (
        _post(
            "/chat/completions", {"messages": [{"role": "user", "content": "1"}]}, "bad"
        ).status_code
        == 401
    )
    listed = httpx.get(
        os.environ["OPENAI_BASE_URL"] + "/models",
        headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
    ).json()
    if listed["data"][0]["id"] != os.environ["OPENAI_MODEL"]:
        raise SystemExit(3)
    _chat([{"role": "user", "content": task["prompt"]}], max_tokens=2)


def slow_call(task: dict[str, Any]) -> None:
    """One call that the gateway answers too late: exits 4 on the 504."""
    response = _post("/chat/completions", {"messages": [{"role": "user", "content": "1"}]})
    raise SystemExit(4 if response.status_code == 504 else 0)
