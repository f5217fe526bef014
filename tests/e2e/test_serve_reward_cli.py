"""`lightrft serve-reward` as a process, a token set, the `remote` reward source type and an
OpenRLHF client's request;
serving without a token is refused unless --no-auth on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from lightrft.adapters.rewards import FormatReward
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.jobs.serve_reward import (
    ServeOptions,
    build_app,
    build_served_source,
    service_token,
)
from lightrft.entrypoints.wiring.reward_model_builders import build_remote

TEXTS = ["<think>a</think> 4", "4", "<think>x</think>", " <think>b</think> five"]


def _samples() -> list[RewardSample]:
    return [
        RewardSample(PromptRecord(str(i), "p", (1,)), Completion(0, (2,), t, "stop"))
        for i, t in enumerate(TEXTS)
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow  # starts a Python process that imports torch and transformers (~15 s)
def test_serve_reward_process_with_token_and_remote_source(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "LIGHTRFT_REWARD_TOKEN": "t0ken", "PYTHONPATH": os.getcwd()}
    command = [
        sys.executable,
        "-m",
        "lightrft.entrypoints.cli",
        "serve-reward",
        "--port",
        str(port),
        "reward.sources=[{type: format, name: fmt}]",
    ]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code in (200, 401):
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.2)
        assert httpx.post(f"{url}/score", json={"samples": []}).status_code == 401
        os.environ["TEST_RM_TOKEN"] = "t0ken"
        config = load_config(
            algorithm="grpo",
            overrides={
                "reward.sources": [
                    {"type": "remote", "url": url, "token_env": "TEST_RM_TOKEN", "name": "r"}
                ]
            },
        )
        remote = build_remote(config.reward.typed_sources[0], None)  # type: ignore[arg-type]
        expected = FormatReward().score(_samples()).scores
        assert remote.score(_samples()).scores.tolist() == expected.tolist()
        # an OpenRLHF trainer's request (no header: the token in its --remote_rm_url)
        body = {"query": [f"p{t}" for t in TEXTS], "prompts": ["p"] * len(TEXTS)}
        assert httpx.post(f"{url}/get_reward", json=body).status_code == 401
        answer = httpx.post(f"{url}/get_reward?token=t0ken", json=body).json()
        assert answer["rewards"] == expected.tolist()
    finally:
        os.environ.pop("TEST_RM_TOKEN", None)
        proc.terminate()
        proc.wait(timeout=30)


def test_build_app_picks_the_named_source() -> None:
    config = load_config(
        algorithm="grpo",
        overrides={"reward.sources": [{"type": "format", "name": "fmt"}, {"type": "math"}]},
    )
    assert build_served_source(config, "fmt").name == "fmt"
    with pytest.raises(ValueError, match="choose one with --source"):
        build_app(config, ServeOptions(no_auth=True))
    with pytest.raises(ValueError, match="no reward source named 'x'"):
        build_served_source(config, "x")


def test_service_token_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIGHTRFT_REWARD_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"no token: set \$LIGHTRFT_REWARD_TOKEN .* --no-auth"):
        service_token(ServeOptions())
    assert service_token(ServeOptions(no_auth=True)) is None  # loopback, on purpose
    for host in ("0.0.0.0", "10.1.2.3", "myhost"):
        with pytest.raises(ConfigError, match=f"refusing to serve on {host} without a token"):
            service_token(ServeOptions(host=host, no_auth=True))
    monkeypatch.setenv("MY_TOKEN", "t0k")
    assert service_token(ServeOptions(host="0.0.0.0", token_env="MY_TOKEN")) == "t0k"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "no token: set $LIGHTRFT_REWARD_TOKEN"),
        (["--host", "0.0.0.0", "--no-auth"], "refusing to serve on 0.0.0.0 without a token"),
    ],
)
def test_cli_refuses_to_serve_without_a_token(
    flags: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("LIGHTRFT_REWARD_TOKEN", raising=False)
    status = main(["serve-reward", *flags, "reward.sources=[{type: unit_tests}]"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and message in err and len(err.splitlines()) == 1


def test_cli_refuses_a_code_reward_without_a_sandbox(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("bwrap", "unshare"):  # as on a machine without bubblewrap or util-linux
        monkeypatch.setattr(f"lightrft.adapters.sandbox.{module}.find_tool", lambda name: None)
    status = main(["serve-reward", "--no-auth", "reward.sources=[{type: unit_tests}]"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "lightrft: " in line]
    assert status == 1 and len(errors) == 1  # one line (after the --no-auth warning)
    assert errors[0].startswith("lightrft: error: cannot isolate model-written code (bwrap: bwrap")
    assert "apt-get install bubblewrap" in errors[0] and "sandbox: unsafe_local" in errors[0]
