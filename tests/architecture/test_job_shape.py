"""The entrypoints' shape: ``commands/`` parse arguments, ``jobs/`` do the work, ``recipes/``
hold the built-in demos, ``roots/`` build what each verb needs.

``lint-imports`` holds the direction (cli -> commands -> recipes -> jobs; config, wiring,
run_dir and the helpers import no verb). What it cannot see is held here: loading every
command (what ``lightrft --help`` and every verb do first) loads no job and no recipe, so a
command reaches its job only inside ``run``; the roots table of docs/architecture.md names a
root and a job that exist for every verb, the job building through that root; no job imports
``wiring/``, ``container.py`` or ``api.py`` itself.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path


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


ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINTS = ROOT / "lightrft" / "entrypoints"
BUILDERS = (
    "lightrft.entrypoints.wiring",
    "lightrft.entrypoints.container",
    "lightrft.entrypoints.api",
)


def _roots_table() -> list[tuple[str, str, list[str], str]]:
    """(verb, root module path, root names, job module path) per row of the roots table in
    docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The composition roots: one per verb", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[1].startswith("`roots/"):
            continue
        verb, root, _, job = cells
        root_path, *names = re.findall(r"`([^`]+)`", root)
        rows.append((verb.strip("`"), root_path, names, job.strip("`")))
    return rows


def _imported(module: Path) -> set[str]:
    """The modules ``module`` imports (``from X import y`` also counts ``X.y``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_roots_table_names_every_verb_s_root_and_job() -> None:
    rows = _roots_table()
    verbs = {verb for verb, *_ in rows}
    expected = {"train", "sft", "rm train", "rm eval", "serve-reward", "eval", "chat"}
    assert expected | {"checkpoints export"} <= verbs, f"verbs without a root row: {verbs}"
    for verb, root_path, names, job_path in rows:
        root_file = ENTRYPOINTS / root_path
        job_file = ENTRYPOINTS / job_path
        assert root_file.is_file(), f"{verb}: {root_path} does not exist"
        assert job_file.is_file(), f"{verb}: {job_path} does not exist"
        assert names, f"{verb}: the row names no function or class of {root_path}"
        defined = {
            node.name
            for node in ast.parse(root_file.read_text(encoding="utf-8")).body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
        }
        assert set(names) <= defined, f"{verb}: {root_path} defines none of {set(names) - defined}"
        root_module = "lightrft.entrypoints." + root_path.removesuffix(".py").replace("/", ".")
        reached = _imported(job_file) | {
            m for job in _imported(job_file) for m in _job_imports(job)
        }
        assert any(m.startswith(root_module) for m in reached), (
            f"{verb}: {job_path} does not build through {root_module}"
        )


def _job_imports(module: str) -> set[str]:
    """The imports of a job module named ``module`` (another job it delegates to)."""
    if not module.startswith("lightrft.entrypoints.jobs."):
        return set()
    path = ENTRYPOINTS / "jobs" / (module.split(".")[3] + ".py")
    return _imported(path) if path.is_file() else set()


def test_no_job_imports_a_builder_directly() -> None:
    for job in sorted((ENTRYPOINTS / "jobs").glob("*.py")):
        direct = sorted(m for m in _imported(job) if m.startswith(BUILDERS))
        assert not direct, f"jobs/{job.name} builds by hand ({direct}): ask its verb's root"
