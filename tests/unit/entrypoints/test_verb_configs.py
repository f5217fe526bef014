"""Each verb's config holds its own sections: an RL run's has no ``sft`` section, ``lightrft
sft``'s adds it; both are shown by ``lightrft config show``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from structlog.testing import capture_logs

from lightrft.entrypoints.cli import main
from lightrft.entrypoints.config.loading import ConfigError, load_config, load_sft_config
from lightrft.entrypoints.run_dir.identity import flatten


def _shown(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["config", "show", *args]) == 0
    text = capsys.readouterr().out
    tree = yaml.safe_load("\n".join(li for li in text.splitlines() if not li.startswith("#")))
    return flatten(tree)


def test_config_show_grpo_has_no_sft_key(capsys: pytest.CaptureFixture[str]) -> None:
    keys = _shown(capsys, "grpo")
    assert "algorithm.advantage_estimator" in keys and "optim.lr" in keys
    assert not [key for key in keys if key.startswith("sft.")]


def test_config_show_sft_has_the_sft_section_and_the_run_s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = _shown(capsys, "sft", "sft.epochs=3")
    assert keys["sft.epochs"] == 3
    assert "sft.train_data.path" in keys and "optim.lr" in keys and "model.path" in keys


def test_an_rl_run_refuses_an_sft_override() -> None:
    with pytest.raises(ConfigError, match=r"sft: unknown key"):
        load_config(None, ["sft.epochs=3"], algorithm="grpo")


def test_an_old_run_config_file_loads_for_both_verbs(tmp_path: Path) -> None:
    """A run directory's config.yaml written while every config held ``sft``."""
    old = tmp_path / "config.yaml"
    old.write_text(yaml.safe_dump({"optim": {"lr": 3e-6}, "sft": {"epochs": 5}}))
    with capture_logs() as logs:
        rl = load_config(old, [], algorithm="grpo")
    assert rl.optim.lr == 3e-6 and "sft" not in type(rl).model_fields
    assert [e["section"] for e in logs if e["event"] == "config.section_skipped"] == ["sft"]
    sft = load_sft_config(old)
    assert sft.sft.epochs == 5 and sft.optim.lr == 3e-6
