"""Run configuration: pydantic v2 models, YAML loading, overrides, algorithm presets."""

from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.config.run_config import RunConfig

__all__ = ["RunConfig", "load_config"]
