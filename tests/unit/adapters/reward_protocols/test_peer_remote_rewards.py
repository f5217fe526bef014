"""The ``remote`` source speaking OpenRLHF's and the original LightRFT's reward protocols,
against a server on 127.0.0.1 written here from the published protocol: OpenRLHF's
``remote_rm_utils.py`` / ``agent.py`` POST ``{"query", "prompts", "labels"}`` and read
``{"rewards"}`` (``serve_rm.py`` answers ``{"rewards", "scores", "extra_logs"}``); the
original's ``remote_rm_fn`` POSTs ``{"queries", "prompts", "references"}`` (``"images"``:
base64 JPEGs) and reads ``{"rewards"}``.

The server scores a sample by the number its response (the query after its prompt) spells,
so the expected rewards are read off the responses."""

from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import torch
from PIL import Image

from lightrft.adapters.reward_protocols import (
    WIRE_FORMATS,
    PeerRemoteRewardSource,
    RemoteScoringError,
)
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.config.reward_model_configs import RemoteRewardConfig
from lightrft.entrypoints.wiring.reward_model_builders import build_remote

Answer = Callable[[dict[str, Any]], tuple[int, Any]]


class PeerServer:
    """A reward server on 127.0.0.1; ``answer(body) -> (status, JSON)``; keeps the bodies
    and Authorization headers it got."""

    def __init__(self, answer: Answer, path: str = "/get_reward") -> None:
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                if self.path != path:
                    status, payload = 404, {"detail": "not found"}
                else:
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    server.bodies.append(body)
                    server.auth.append(self.headers.get("Authorization"))
                    status, payload = answer(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}{path}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def spelled(queries: list[str], prompts: list[str]) -> list[float]:
    """The number each response spells (the query after its prompt)."""
    return [float(q[len(p) :]) for q, p in zip(queries, prompts, strict=True)]


def openrlhf_answer(body: dict[str, Any]) -> tuple[int, Any]:
    rewards = spelled(body["query"], body["prompts"])
    labels = [float(label) for label in body["labels"]]
    extra = {"is_label": [float(r == lab) for r, lab in zip(rewards, labels, strict=True)]}
    return 200, {"rewards": rewards, "scores": rewards, "extra_logs": extra}


@pytest.fixture
def servers() -> Iterator[list[PeerServer]]:
    made: list[PeerServer] = []
    yield made
    for server in made:
        server.close()


def serve(made: list[PeerServer], answer: Answer) -> PeerServer:
    server = PeerServer(answer)
    made.append(server)
    return server


def samples(*pairs: tuple[str, str]) -> list[RewardSample]:
    """(response, reference) pairs, each to its own prompt ``P<i>: ``."""
    return [
        RewardSample(
            PromptRecord(f"u{i}", f"P{i}: ", (1,), reference=reference),
            Completion(i, (2,), response, "stop"),
        )
        for i, (response, reference) in enumerate(pairs)
    ]


def peer(url: str, protocol: str = "openrlhf", **kw: Any) -> PeerRemoteRewardSource:
    return PeerRemoteRewardSource(url, WIRE_FORMATS[protocol], sleep=lambda s: None, **kw)


def test_openrlhf_rewards_arrive_in_order(servers: list[PeerServer]) -> None:
    server = serve(servers, openrlhf_answer)
    source = peer(server.url, request_batch=2, token="s3cret")
    result = source.score(samples(("0.5", "1"), ("2", "2"), ("-1", "3")))
    torch.testing.assert_close(result.scores, torch.tensor([0.5, 2.0, -1.0]))
    assert [set(b) for b in server.bodies] == [{"query", "prompts", "labels"}] * 2
    assert server.bodies[0] == {
        "query": ["P0: 0.5", "P1: 2"],
        "prompts": ["P0: ", "P1: "],
        "labels": ["1", "2"],
    }
    assert server.auth == ["Bearer s3cret"] * 2
    assert float(result.metrics["requests"]) == 2.0 and float(result.metrics["retries"]) == 0.0
    # extra_logs: request 1 [0, 1] (2 is its label), request 2 [0]: mean over requests 0.25
    assert float(result.metrics["extra_is_label"]) == pytest.approx(0.25)
    source.close()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"scores": [1.0]}, "no 'rewards'"),
        ([1.0], "expected an object with 'rewards'"),
        ({"rewards": [1.0, 2.0]}, "2 rewards for 1 samples"),
        ({"rewards": ["high"]}, "non-numeric reward 'high'"),
        (b"<html>oops</html>", "not JSON"),
    ],
)
def test_a_malformed_answer_is_one_line_naming_the_url(
    servers: list[PeerServer], answer: Any, reason: str
) -> None:
    server = serve(servers, lambda body: (200, answer))
    source = peer(server.url)
    with pytest.raises(RemoteScoringError) as caught:
        source.score(samples(("1", "1")))
    message = str(caught.value)
    assert "\n" not in message and reason in message
    assert server.url.rsplit("/", 1)[0] in message
    assert len(server.bodies) == 1  # not retried
    source.close()


def test_a_busy_server_is_retried_then_a_failed_request_scores_when_asked(
    servers: list[PeerServer],
) -> None:
    calls = {"n": 0}

    def busy_once(body: dict[str, Any]) -> tuple[int, Any]:
        calls["n"] += 1
        return (503, {"detail": "busy"}) if calls["n"] == 1 else openrlhf_answer(body)

    server = serve(servers, busy_once)
    result = peer(server.url).score(samples(("3", "3")))
    assert result.scores.tolist() == [3.0] and float(result.metrics["retries"]) == 1.0
    down = serve(servers, lambda body: (500, {"detail": "down"}))
    source = peer(down.url, max_attempts=2, on_failure="score", failure_score=-7.0)
    result = source.score(samples(("1", "1"), ("2", "2")))
    assert result.scores.tolist() == [-7.0, -7.0] and float(result.metrics["failures"]) == 2.0
    assert len(down.bodies) == 2  # max_attempts


def test_the_original_protocol_sends_queries_references_and_images(
    servers: list[PeerServer],
) -> None:
    def original(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"rewards": spelled(body["queries"], body["prompts"])}

    server = serve(servers, original)
    batch = samples(("4", "a"), ("5", "b"))
    image = Image.new("RGBA", (4, 3), (255, 0, 0, 255))
    first = batch[0]
    batch[0] = RewardSample(
        PromptRecord("u0", "P0: ", (1,), reference="a", multimodal={"images": [image]}),
        first.completion,
    )
    result = peer(server.url, "original").score(batch)
    assert result.scores.tolist() == [4.0, 5.0]
    (body,) = server.bodies
    assert body["references"] == ["a", "b"] and body["queries"] == ["P0: 4", "P1: 5"]
    assert body["images"][1] is None
    decoded = Image.open(io.BytesIO(base64.b64decode(body["images"][0][0])))
    assert decoded.format == "JPEG" and decoded.size == (4, 3) and decoded.mode == "RGB"


def test_remote_rm_url_scores_against_a_server_of_the_original(
    servers: list[PeerServer],
) -> None:
    server = serve(servers, lambda b: (200, {"rewards": spelled(b["queries"], b["prompts"])}))
    config = load_config(overrides=["--remote_rm_url", server.url])
    (section,) = config.reward.sources
    assert isinstance(section, RemoteRewardConfig) and section.protocol == "original"
    source = build_remote(section, None)  # type: ignore[arg-type]  # the context is unused
    assert source.score(samples(("1.5", "x"))).scores.tolist() == [1.5]


def test_the_openrlhf_protocol_is_chosen_in_the_config(servers: list[PeerServer]) -> None:
    server = serve(servers, openrlhf_answer)
    section = RemoteRewardConfig(type="remote", url=server.url, protocol="openrlhf")
    source = build_remote(section, None)  # type: ignore[arg-type]
    assert isinstance(source, PeerRemoteRewardSource)
    assert source.score(samples(("6", "6"))).scores.tolist() == [6.0]
