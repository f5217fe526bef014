# The two commands a newcomer runs (see README.md):
#   make train   sets up and runs the main job
#   make test    sets up and runs the tests (what CI runs)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup train test bench lint

setup:
	@bash scripts/setup.sh

train: setup
	$(VENV)/bin/lightrft demo

test: setup
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -p no:cacheprovider

# ruff over the code, mypy (strict for domain and application, see pyproject.toml), and the
# import-linter contracts (layers, adapter independence, pure domain, no config import cycle)
lint: setup
	$(VENV)/bin/ruff check lightrft tests bench
	$(VENV)/bin/mypy lightrft/domain lightrft/application
	$(VENV)/bin/lint-imports

bench: setup
	$(PY) bench/bench_logprobs.py
