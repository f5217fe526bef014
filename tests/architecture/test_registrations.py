"""The built-in builders are registered by the one list of ``wiring/registrations.py``, not as
a side effect of importing the modules that define them."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_the_builder_modules_registers_nothing() -> None:
    code = (
        "import json, pkgutil, importlib\n"
        "import lightrft.entrypoints.wiring as wiring\n"
        "for m in pkgutil.iter_modules(wiring.__path__):\n"
        "    if m.name != 'registrations':\n"
        "        importlib.import_module(f'lightrft.entrypoints.wiring.{m.name}')\n"
        "import lightrft.entrypoints.container, lightrft.entrypoints.api\n"
        "from lightrft.entrypoints.wiring import registries as r\n"
        "kinds = [r.ENGINES, r.REWARD_SOURCES, r.STRATEGIES, r.MODEL_LOADERS, r.ENVIRONMENTS,\n"
        "         r.TOOLS, r.JUDGE_ENGINES, r.SCALAR_RM_ENGINES]\n"
        "before = {k.kind: list(k.names()) for k in kinds}\n"
        "from lightrft.entrypoints.wiring.registrations import BUILTINS, register_builtins\n"
        "register_builtins(); register_builtins()\n"
        "after = {k.kind: sorted(k.names()) for k in kinds}\n"
        "listed = {k.kind: sorted(n for reg, n, _ in BUILTINS if reg is k) for k in kinds}\n"
        "print(json.dumps({'before': before, 'after': after, 'listed': listed}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(not names for names in result["before"].values()), result["before"]
    assert result["after"] == result["listed"]
    assert "math" in result["after"]["reward source type"]
    assert "text" in result["after"]["model modality"]
