"""Contract suites: a module's ``KNOWN_BUGS`` marks (test, implementation id) pairs xfail.

``KNOWN_BUGS`` maps (test name, parametrized implementation id) to the open adapter bug.
The xfail is strict: once the bug is fixed the test fails until its entry is removed.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _known_bugs(request: pytest.FixtureRequest) -> None:
    bugs: dict[tuple[str, str | None], str] = getattr(request.module, "KNOWN_BUGS", {})
    callspec = getattr(request.node, "callspec", None)
    key = (request.node.originalname, callspec.id if callspec else None)
    if key in bugs:
        request.applymarker(pytest.mark.xfail(reason=bugs[key], strict=True))
