"""Adapters: implementations of the domain ports on top of third-party libraries."""
