"""Pure algorithms, value objects and ports. Imports stdlib, torch and numpy only."""

from lightrft.domain import process_rewards as _process_rewards  # noqa: F401  (registers process_grpo)
