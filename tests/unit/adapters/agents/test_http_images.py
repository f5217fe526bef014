"""Images through the HTTP environment protocol: an environment served over HTTP returns a
picture (a PIL image, bytes or a path on its side); the client gets its encoded bytes back;
malformed, oversized or too many images are refused naming the message and the image."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import httpx
import pytest
from PIL import Image

from lightrft.adapters.agents.environment_service import EnvironmentService
from lightrft.adapters.agents.http_environment import EnvironmentUnavailableError
from lightrft.adapters.agents.http_wire import MAX_WIRE_IMAGES, outcome_from_wire
from lightrft.adapters.fakes import synthetic_prompts
from lightrft.adapters.http_client.retry import CallFailed
from lightrft.domain.agent import Action, ChatMessage, StepOutcome
from lightrft.domain.types import PromptRecord
from tests.unit.adapters.agents.test_http_environment import envs


def picture() -> Image.Image:
    return Image.new("RGB", (7, 5), (200, 10, 30))


def png_bytes() -> bytes:
    out = io.BytesIO()
    picture().save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("kind", ["pil", "bytes", "path"])
def test_an_image_observation_crosses_the_wire(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "shot.png"
    path.write_bytes(png_bytes())
    item = {"pil": picture(), "bytes": png_bytes(), "path": str(path)}[kind]

    class Camera:
        def reset(self, prompt: PromptRecord) -> PromptRecord:
            return prompt

        def step(self, action: Action) -> StepOutcome:
            return StepOutcome((ChatMessage("tool", "shot", "camera", (item,)),))

        def close(self) -> None:
            pass

    env = envs(EnvironmentService(Camera))()
    env.reset(synthetic_prompts(1)[0])
    (message,) = env.step(Action((4,), "1", "stop")).observation
    (received,) = message.images
    assert isinstance(received, bytes)
    decoded = Image.open(io.BytesIO(received))
    assert decoded.size == (7, 5) and decoded.convert("RGB").getpixel((3, 2)) == (200, 10, 30)


def answer(images: object) -> dict[str, object]:
    message = {"role": "tool", "content": "x", "images": images}
    return {
        "reward": 0.0,
        "done": False,
        "observation": [{"role": "user", "content": "y"}, message],
    }


@pytest.mark.parametrize(
    ("images", "message"),
    [
        ("abc", "message 1 'images' that is not a list of base64 strings"),
        (["!!not base64!!"], "message 1 image 0 that is not base64"),
        (["QUJD"] * (MAX_WIRE_IMAGES + 1), f"more than {MAX_WIRE_IMAGES}"),
        (["A" * (8 * 2**20)], "message 1 image 0 larger than"),
    ],
)
def test_bad_wire_images_are_refused_naming_them(images: object, message: str) -> None:
    with pytest.raises(CallFailed, match=message):
        outcome_from_wire(answer(images), "env http://e")
    ok = outcome_from_wire(answer([base64.b64encode(b"ABC").decode()]), "env http://e")
    assert ok.observation[1].images == (b"ABC",)


def test_a_bad_image_answer_is_an_unavailable_environment() -> None:
    def fault(verb: str, n: int) -> httpx.Response | None:
        if verb == "step":
            return httpx.Response(200, content=json.dumps(answer(["%%"])).encode())
        return None

    env = envs(EnvironmentService(lambda: None), fault)()  # type: ignore[arg-type, return-value]
    with pytest.raises(EnvironmentUnavailableError, match="image 0 that is not base64"):
        env.step(Action((4,), "1", "stop"))
