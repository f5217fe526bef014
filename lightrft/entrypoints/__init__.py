"""Composition root: CLI, configuration, dependency-injection container, embedding API."""
