"""The entrypoints' shape: ``commands/`` parse arguments, ``jobs/`` do the work, ``recipes/``
hold the built-in demos.

``lint-imports`` holds the direction (cli -> commands -> recipes -> jobs; config, wiring,
run_dir and the helpers import no verb). What it cannot see is held here: loading every
command (what ``lightrft --help`` and every verb do first) loads no job and no recipe, so a
command reaches its job only inside ``run``.
"""

from __future__ import annotations

import json
import subprocess
import sys


def test_loading_the_commands_loads_no_job_and_no_recipe() -> None:
    code = (
        "import json, sys\n"
        "from lightrft.entrypoints.commands import load_commands\n"
        "names = load_commands().names()\n"
        "print(json.dumps({'commands': sorted(names), 'modules': sorted(sys.modules)}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "train" in result["commands"] and "demo" in result["commands"]
    loaded = [
        m
        for m in result["modules"]
        if m.startswith(("lightrft.entrypoints.jobs", "lightrft.entrypoints.recipes"))
    ]
    assert not loaded, f"a command imports these at its top level, not inside run: {loaded}"
