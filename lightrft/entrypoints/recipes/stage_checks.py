"""What a multi-stage demo checks before its first stage starts (``demo rlhf``, ``demo safe``,
``demo agent``, ``demo ttrl``).

A demo's later stage (the GRPO run after minutes of reward-model training or an SFT
warm-up) used to read the user's ``key=value`` overrides only when it began: a typo
(``model.colour=red``) or a bad flag value (``--cost-limit nan``) was refused after the
earlier stages had run. :func:`check_stage` loads that stage's config up front, with the
paths the earlier stages will write, so every override and flag is checked first.

:func:`demo_run_dir` honours ``logging.run_dir=DIR`` as the demo's own directory (like
``--run-dir``): every stage lives under it. Passed on to one stage only, it used to
redirect the GRPO stage alone while the demo read its figures from the directory it did not
use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.loading import ConfigError, load_config

RUN_DIR_KEY = "logging.run_dir"


def demo_run_dir(
    overrides: Sequence[str], flag: Path | None, default: Path
) -> tuple[Path, list[str]]:
    """The demo's run directory (``--run-dir`` or the last ``logging.run_dir=`` override,
    else ``default``) and the overrides without ``logging.run_dir``; refuses the two when
    they name different directories."""
    given = [Path(o.split("=", 1)[1]) for o in overrides if o.startswith(f"{RUN_DIR_KEY}=")]
    rest = [o for o in overrides if not o.startswith(f"{RUN_DIR_KEY}=")]
    if given and flag is not None and given[-1] != flag:
        raise ConfigError(
            f"{RUN_DIR_KEY}={given[-1]} and --run-dir {flag} name different directories; the "
            "demo's stages all live under one: give --run-dir DIR alone"
        )
    return (given[-1] if given else flag or default), rest


def check_stage(stage: str, words: Sequence[str], algorithm: str = "grpo") -> RunConfig:
    """The config of the demo's stage ``stage`` from ``words``, loaded now (before any stage
    runs); a ConfigError names the stage."""
    try:
        return load_config(None, list(words), algorithm=algorithm)
    except ConfigError as error:
        raise ConfigError(
            f"the demo's {stage} stage, checked before any stage runs: {error}"
        ) from None
