"""`serve-reward` answering other frameworks' reward clients, on 127.0.0.1.

The clients are plain httpx POSTs of the bodies the published protocols send (OpenRLHF's
``remote_rm_utils.py`` POSTs ``{"query", "prompts", "labels"}`` to ``--remote_rm_url`` with no
Authorization header and reads ``{"rewards"}``; the original LightRFT's ``remote_rm_fn``
POSTs ``{"queries", "prompts", "references"}`` and ``"images"`` as base64 JPEGs), and our own
``remote`` source with ``protocol: openrlhf | original``. The served source records what it
was given, so the split of a query into prompt and response is checked, and scores each
sample by the number its response ends with."""

from __future__ import annotations

import base64
import io
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
import torch
from PIL import Image

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.adapters.reward_protocols import SERVED_PATHS, RemoteScoringError
from lightrft.adapters.reward_service import BackgroundServer, create_app
from lightrft.adapters.reward_service.media import MediaLimits, RequestMedia
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.reward_model_configs import RemoteRewardConfig
from lightrft.entrypoints.jobs.serve_reward import (
    ServeOptions,
    build_app,
    build_served_source,
    decode_media,
)
from lightrft.entrypoints.wiring.reward_model_builders import build_remote
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

TOKEN = "0123456789abcdef-peer"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


class Spelled:
    """Scores a sample by the number its response ends with, plus 100 per image it carries;
    keeps (prompt, response, reference, image sizes) of every sample."""

    name, reads_media = "spelled", True

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None, list[tuple[int, int]]]] = []
        self.lock = threading.Lock()

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        values = []
        for s in samples:
            images = s.prompt.multimodal.get("images") or []
            with self.lock:
                self.seen.append(
                    (
                        s.prompt.prompt_text,
                        s.completion.text,
                        s.prompt.reference,
                        [image.size for image in images],
                    )
                )
            values.append(float(s.completion.text.split()[-1]) + 100.0 * len(images))
        return RewardResult(torch.tensor(values), {"batch": torch.tensor(float(len(samples)))})

    def onload(self) -> None: ...

    def offload(self) -> None: ...


@pytest.fixture
def served() -> Iterator[tuple[str, Spelled]]:
    source = Spelled()
    media = RequestMedia(MediaLimits(max_items=4), decode_media)
    app = create_app(source, token=TOKEN, max_batch=8, media=media, peers=SERVED_PATHS)
    with BackgroundServer(app) as server:
        yield server.url, source


def test_an_openrlhf_client_gets_rewards_in_order(served: tuple[str, Spelled]) -> None:
    url, source = served
    body = {
        "query": ["Q0: 1.5", "Q1: -2", "Q2: 7"],
        "prompts": ["Q0: ", "Q1: ", "Q2: "],
        "labels": ["1.5", None, 7],
    }
    answer = httpx.post(f"{url}/get_reward", json=body, headers=BEARER)
    assert answer.status_code == 200
    assert answer.json() == {
        "rewards": [1.5, -2.0, 7.0],
        "scores": [1.5, -2.0, 7.0],
        "extra_logs": {},
    }
    assert source.seen == [
        ("Q0: ", "1.5", "1.5", []),
        ("Q1: ", "-2", None, []),
        ("Q2: ", "7", "7", []),
    ]
    # the prefixed path answers the same; OpenRLHF before v0.5 sent the queries alone
    alone = httpx.post(f"{url}/openrlhf/get_reward", json={"query": ["3"]}, headers=BEARER)
    assert alone.json()["rewards"] == [3.0] and source.seen[-1] == ("", "3", None, [])
    nulls = {"query": ["q 5"], "prompts": None, "labels": None}
    assert httpx.post(f"{url}/get_reward", json=nulls, headers=BEARER).json()["rewards"] == [5.0]
    assert source.seen[-1] == ("", "q 5", None, [])


def test_an_unchanged_openrlhf_trainer_sends_the_token_in_its_url(
    served: tuple[str, Spelled],
) -> None:
    """OpenRLHF posts to --remote_rm_url with no Authorization header: the token rides in
    the URL, on the peer paths only."""
    url, _ = served
    body = {"query": ["p 4"], "prompts": ["p "], "labels": ["4"]}
    assert httpx.post(f"{url}/get_reward", json=body).status_code == 401
    assert httpx.post(f"{url}/get_reward?token=wrong", json=body).status_code == 401
    good = httpx.post(f"{url}/get_reward?token={TOKEN}", json=body)
    assert good.status_code == 200 and good.json()["rewards"] == [4.0]
    score_body = {"samples": [{"prompt": "p ", "response": "4"}]}
    assert httpx.post(f"{url}/score?token={TOKEN}", json=score_body).status_code == 401
    assert httpx.post(f"{url}/original/get_reward", json=body).status_code == 401


def test_an_original_client_gets_rewards_and_its_images_reach_the_source(
    served: tuple[str, Spelled],
) -> None:
    url, source = served
    buffer = io.BytesIO()
    Image.new("RGB", (6, 5), "red").save(buffer, format="JPEG")
    jpeg = base64.b64encode(buffer.getvalue()).decode("ascii")
    body = {
        "queries": ["<img> what? 2", "no image 0.25"],
        "prompts": ["<img> what? ", "no image "],
        "references": ["2", None],
        "images": [[jpeg], None],
    }
    answer = httpx.post(f"{url}/original/get_reward", json=body, headers=BEARER)
    assert answer.status_code == 200 and answer.json() == {"rewards": [102.0, 0.25]}
    assert source.seen == [("<img> what? ", "2", "2", [(6, 5)]), ("no image ", "0.25", None, [])]


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/get_reward",
            {"query": ["a 1", "b 2"], "prompts": ["a ", "c "]},
            "invalid openrlhf request: query[1] does not start with prompts[1]",
        ),
        (
            "/get_reward",
            {"queries": ["a 1"]},
            "invalid openrlhf request: 'query' must be a non-empty list, got null",
        ),
        (
            "/get_reward",
            {"query": ["a 1"], "labels": ["x", "y"]},
            "invalid openrlhf request: 'labels' has 2 entries for 1 queries",
        ),
        (
            "/openrlhf/get_reward",
            {"query": ["a 1", 5]},
            "invalid openrlhf request: query[1] must be a string, got int",
        ),
        (
            "/original/get_reward",
            {"queries": ["a 1"], "images": [[7]]},
            "invalid original request: images[0] must be a list of base64 strings or null",
        ),
        (
            "/original/get_reward",
            [1, 2],
            "invalid original request: expected a JSON object with 'queries'",
        ),
        ("/original/get_reward", b"{not json", "invalid original request: the body is not JSON"),
        (
            "/original/get_reward",
            {"queries": ["x"], "images": [["%%%"]]},
            "samples.0.images.0.base64: invalid base64",
        ),
    ],
)
def test_a_malformed_body_is_a_422_with_one_line(
    served: tuple[str, Spelled], path: str, body: Any, message: str
) -> None:
    url, source = served
    content = body if isinstance(body, bytes) else None
    answer = httpx.post(
        f"{url}{path}", json=None if content else body, content=content, headers=BEARER
    )
    detail = answer.json()["detail"]
    assert answer.status_code == 422 and detail == message and "\n" not in detail
    assert source.seen == []  # nothing was scored


def test_the_limits_of_score_hold_on_the_peer_paths(served: tuple[str, Spelled]) -> None:
    url, source = served
    nine = {"query": [str(i) for i in range(9)]}  # max_batch is 8
    too_many = httpx.post(f"{url}/get_reward", json=nine, headers=BEARER)
    assert too_many.status_code == 413 and "9 samples exceed the limit of 8" in too_many.text
    jpeg = base64.b64encode(b"x").decode()
    five = {"queries": ["1"], "images": [[jpeg] * 5]}  # max_items is 4
    media = httpx.post(f"{url}/original/get_reward", json=five, headers=BEARER)
    assert media.status_code == 413 and source.seen == []


@pytest.mark.parametrize(
    ("protocol", "path"), [("openrlhf", "/get_reward"), ("original", "/original/get_reward")]
)
def test_our_remote_source_round_trips_a_scalar_rm_through_each_protocol(
    protocol: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scalar RM served: its rewards over the peer protocol equal in-process scoring bit
    for bit (it reads prompt + response text, which the query carries)."""
    rm = HfScalarRewardModel(
        tiny_classifier(seed=4), tiny_tokenizer(), torch.device("cpu"), name="rm"
    )
    batch = [
        RewardSample(
            PromptRecord(f"u{i}", f"question {i}: ", (5, 6), reference=str(i)),
            Completion(0, (8, 9), text, "stop"),
        )
        for i, text in enumerate(["4", "hello there", "blue sky", "x" * 40, ""])
    ]
    local = rm.score(batch).scores
    monkeypatch.setenv("PEER_TOKEN", TOKEN)
    with BackgroundServer(create_app(rm, token=TOKEN, peers=SERVED_PATHS)) as server:
        section = RemoteRewardConfig(
            type="remote",
            url=f"{server.url}{path}",
            protocol=protocol,
            token_env="PEER_TOKEN",
        )
        remote = build_remote(section, None).score(batch)  # type: ignore[arg-type]
        monkeypatch.setenv("PEER_TOKEN", "not-the-token")
        refused = build_remote(section.model_copy(update={"max_attempts": 1}), None)  # type: ignore[arg-type]
        with pytest.raises(RemoteScoringError, match="401"):
            refused.score(batch[:1])
    # one request, so the model pads the batch as in-process; float32 -> JSON -> float is
    # exact: equal once back in the model's dtype
    assert (
        torch.equal(remote.scores.to(local.dtype), local)
        and float(remote.metrics["requests"]) == 1.0
    )


def test_serve_reward_s_app_answers_openrlhf_with_the_configured_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app ``lightrft serve-reward`` builds (a ``math`` rule) answers an OpenRLHF body
    with the rule's rewards, the same as in-process."""
    monkeypatch.setenv("LIGHTRFT_REWARD_TOKEN", TOKEN)
    config = load_config(algorithm="grpo", overrides={"reward.sources": [{"type": "math"}]})
    prompts = ["What is 2+2? ", "What is 3*3? "]
    responses = ["The answer is \\boxed{4}", "The answer is \\boxed{8}"]
    labels = ["4", "9"]
    expected = (
        build_served_source(config, None)
        .score(
            [
                RewardSample(
                    PromptRecord(str(i), p, (1,), reference=r), Completion(0, (), t, "stop")
                )
                for i, (p, t, r) in enumerate(zip(prompts, responses, labels, strict=True))
            ]
        )
        .scores.tolist()
    )
    assert expected[0] > expected[1]  # one right, one wrong
    with BackgroundServer(build_app(config, ServeOptions())) as server:
        body = {
            "query": [p + t for p, t in zip(prompts, responses, strict=True)],
            "prompts": prompts,
            "labels": labels,
        }
        answer = httpx.post(f"{server.url}/get_reward?token={TOKEN}", json=body)
    assert answer.status_code == 200 and answer.json()["rewards"] == expected
