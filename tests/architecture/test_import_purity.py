"""`import lightrft` and the domain pull in no heavy framework and never touch CUDA."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import lightrft

PACKAGE = Path(lightrft.__file__).parent
HEAVY = [
    "transformers",
    "deepspeed",
    "vllm",
    "sglang",
    "peft",
    "datasets",
    "flash_attn",
    "torch_npu",
    "wandb",
    "pydantic",
    "structlog",
]


def _modules_after_import(statement: str) -> dict[str, object]:
    code = (
        "import json, sys\n"
        f"{statement}\n"
        "import torch\n"
        "print(json.dumps({'modules': sorted(sys.modules),"
        " 'cuda_initialized': torch.cuda.is_initialized()}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_domain_pulls_no_framework_and_no_cuda() -> None:
    domain_modules = sorted(
        p.stem for p in (PACKAGE / "domain").glob("*.py") if p.stem != "__init__"
    )
    statement = "import lightrft, lightrft.domain\n" + "\n".join(
        f"import lightrft.domain.{name}" for name in domain_modules
    )
    result = _modules_after_import(statement)
    loaded = {m.split(".")[0] for m in result["modules"]}  # type: ignore[union-attr]
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert result["cuda_initialized"] is False


def test_import_application_pulls_no_framework() -> None:
    app_modules = sorted(
        p.stem for p in (PACKAGE / "application").glob("*.py") if p.stem != "__init__"
    )
    statement = "import lightrft.application\n" + "\n".join(
        f"import lightrft.application.{name}" for name in app_modules
    )
    result = _modules_after_import(statement)
    loaded = {m.split(".")[0] for m in result["modules"]}  # type: ignore[union-attr]
    assert loaded.isdisjoint(set(HEAVY) - {"structlog"}), sorted(loaded & set(HEAVY))
    assert result["cuda_initialized"] is False


def _device_or_collective_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "torch" and node.attr in ("cuda", "distributed", "npu"):
                found.append(f"{path.name}:{node.lineno}: torch.{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                if name.startswith(("torch.cuda", "torch.distributed", "torch_npu")):
                    found.append(f"{path.name}:{node.lineno}: import {name}")
        elif isinstance(node, ast.Constant) and node.value in ("cuda", "npu", "nccl", "hccl"):
            found.append(f"{path.name}:{node.lineno}: literal {node.value!r}")
    return found


def test_domain_and_application_name_no_device() -> None:
    offenders = []
    for layer in ("domain", "application"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            offenders += _device_or_collective_uses(path)
    assert offenders == []
