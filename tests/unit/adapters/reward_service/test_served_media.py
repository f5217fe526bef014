"""`serve-reward` with images and audio (FastAPI's TestClient against the app): base64 and
paths under the media root reach the source decoded; paths outside it, oversized items, too
many items, undecodable data and media for a text source are refused with 4xx errors naming
the field and the limit. A tiny Qwen2-VL reward model scores served images like in-process."""

from __future__ import annotations

import base64
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient
from PIL import Image

from lightrft.adapters.reward_service import create_app
from lightrft.adapters.reward_service.media import MediaLimits, RequestMedia
from lightrft.domain.types import RewardResult, RewardSample
from lightrft.entrypoints.jobs.serve_reward import decode_media
from tests.unit.adapters.reward_models.test_media_reward_model import VL_PROMPT, vl_rm


def png(colour: str, size: int = 28) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format="PNG")
    return buffer.getvalue()


class MediaCounter:
    """A source that scores each sample by the red channel of its first image (and records)."""

    name, reads_media = "counter", True

    def __init__(self, reads_media: bool = True) -> None:
        self.reads_media = reads_media
        self.seen: list[dict[str, Any]] = []

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        self.seen.extend(dict(s.prompt.multimodal) for s in samples)
        firsts = [s.prompt.multimodal.get("images", [None])[0] for s in samples]
        return RewardResult(
            torch.tensor([float(i.getpixel((0, 0))[0]) if i else -1.0 for i in firsts])
        )

    def onload(self) -> None: ...

    def offload(self) -> None: ...

    def close(self) -> None: ...


def client(source: Any, root: Path | None, **limits: int) -> TestClient:
    media = RequestMedia(MediaLimits(root, **limits), decode_media)
    return TestClient(create_app(source, media=media))


def post(c: TestClient, *samples: dict[str, Any]) -> Any:
    return c.post("/score", json={"samples": list(samples)})


def sample(**media: Any) -> dict[str, Any]:
    return {"prompt": "p", "response": "r", **media}


def test_base64_and_rooted_paths_arrive_decoded(tmp_path: Path) -> None:
    (tmp_path / "red.png").write_bytes(png("red"))
    source = MediaCounter()
    with client(source, tmp_path) as c:
        b64 = base64.b64encode(png("blue")).decode()
        reply = post(
            c,
            sample(images=[{"path": "red.png"}]),
            sample(images=[{"base64": f"data:image/png;base64,{b64}"}]),
            sample(),  # a text sample in the same request
        )
    assert reply.status_code == 200, reply.text
    assert reply.json()["scores"] == [255.0, 0.0, -1.0]
    assert [len(m.get("images", [])) for m in source.seen] == [1, 1, 0]


@pytest.mark.parametrize(
    ("media", "status", "message"),
    [
        ({"images": [{"path": "../secret.png"}]}, 403, "samples.0.images.0.path: '../secret.png' is outside the media root"),
        ({"images": [{"path": "link.png"}]}, 403, "samples.0.images.0.path: 'link.png' is outside"),
        ({"images": [{"path": "gone.png"}]}, 422, "samples.0.images.0.path: no file 'gone.png'"),
        ({"images": [{"path": "big.png"}]}, 413, r"samples.0.images.0.path: \d+ bytes, over 2000 \(max_media_bytes\)"),
        ({"images": [{"base64": "A" * 4000}]}, 413, r"samples.0.images.0.base64: over 2000 bytes \(max_media_bytes\)"),
        ({"images": [{"base64": "not base64!"}]}, 422, "samples.0.images.0.base64: invalid base64"),
        ({"images": [{"base64": base64.b64encode(b"text").decode()}]}, 422, "samples.0.images.0: .*holds no readable image"),
        ({"audios": [{"base64": base64.b64encode(b"RIFF").decode()}]}, 422, "samples.0.audios.0: .*not a PCM .wav"),
        ({"images": [{"path": "red.png"}] * 4}, 413, "samples: 4 media items exceed the limit of 3 per request"),
        ({"images": [{"path": "red.png", "base64": "AA=="}]}, 422, "give exactly one of 'path' or 'base64'"),
    ],
)  # fmt: skip
def test_refused_media_name_the_field_and_limit(
    tmp_path: Path, media: dict[str, Any], status: int, message: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "red.png").write_bytes(png("red"))
    (root / "big.png").write_bytes(bytes(5000))  # refused on its size, before reading
    (tmp_path / "secret.png").write_bytes(png("red"))
    os.symlink(tmp_path / "secret.png", root / "link.png")
    with client(MediaCounter(), root, max_item_bytes=2000, max_items=3) as c:
        reply = post(c, sample(**media))
    assert reply.status_code == status, reply.text
    assert re.search(message, reply.json()["detail"])


def test_paths_need_a_root_and_media_a_source_that_reads_them(tmp_path: Path) -> None:
    (tmp_path / "red.png").write_bytes(png("red"))
    with client(MediaCounter(), None) as c:
        reply = post(c, sample(images=[{"path": str(tmp_path / "red.png")}]))
    assert (
        reply.status_code == 403
        and "not served (start the service with --media-root)" in reply.text
    )
    with client(MediaCounter(reads_media=False), tmp_path) as c:
        reply = post(c, sample(), sample(images=[{"path": "red.png"}]))
    assert reply.status_code == 422
    assert "samples.1.images: this reward source does not read images or audio" in reply.text


def test_a_served_vision_reward_model_scores_like_in_process(tmp_path: Path) -> None:
    rm, _ = vl_rm()
    (tmp_path / "blue.png").write_bytes(png("blue", 56))
    red = base64.b64encode(png("red", 56)).decode()
    with torch.no_grad():
        want = rm.pair_scores(
            [VL_PROMPT] * 2,
            ["red", "red"],
            [{"images": [decode_media("images", png(c, 56), "x")]} for c in ("red", "blue")],
        )
    with client(rm, tmp_path) as c:
        reply = post(
            c,
            {"prompt": VL_PROMPT, "response": "red", "images": [{"base64": red}]},
            {"prompt": VL_PROMPT, "response": "red", "images": [{"path": "blue.png"}]},
        )
        no_pad = post(c, {"prompt": "colour?", "response": "red", "images": [{"base64": red}]})
    assert reply.status_code == 200, reply.text
    torch.testing.assert_close(torch.tensor(reply.json()["scores"]), want, atol=1e-5, rtol=1e-5)
    assert no_pad.status_code == 422 and "0 image placeholder" in no_pad.text
