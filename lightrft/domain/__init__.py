"""Pure algorithms, value objects and ports. Imports stdlib, torch and numpy only."""
