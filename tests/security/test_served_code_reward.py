"""The audit's scenario end to end: a unit_tests reward served over HTTP, a code block POSTed
by a local process. Without the token it is refused; with it, the code runs behind the
sandbox and leaves nothing on the host."""

from __future__ import annotations

from pathlib import Path

import httpx

from lightrft.adapters.reward_service import BackgroundServer, create_app
from lightrft.adapters.rewards.unit_tests import UnitTestsReward
from lightrft.adapters.sandbox import open_sandbox
from tests.security.escape import spawned


def test_posted_code_cannot_act_on_the_host(tmp_path: Path) -> None:
    mark = tmp_path / "MARK"
    attack = spawned(["/bin/sh", "-c", f"touch {mark}"]) + "\nok = True\n"
    body = {
        "samples": [
            {"prompt": "p", "response": f"```python\n{attack}```", "reference": "assert ok"}
        ]
    }
    reward = UnitTestsReward(open_sandbox(), timeout_s=4.0)
    with BackgroundServer(create_app(reward, token="t0ken")) as server:
        anonymous = httpx.post(f"{server.url}/score", json=body, timeout=30)
        authorized = httpx.post(
            f"{server.url}/score", json=body, headers={"Authorization": "Bearer t0ken"}, timeout=30
        )
    assert anonymous.status_code == 401
    assert authorized.status_code == 200 and authorized.json()["scores"] == [1.0]  # it ran
    assert not mark.exists()  # ... inside the sandbox: the host file was never written
