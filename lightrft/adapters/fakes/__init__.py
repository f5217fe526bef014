"""Small, deterministic, honest implementations of every port, for tests (ours and users')."""
