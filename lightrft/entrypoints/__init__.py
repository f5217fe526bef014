"""Composition root: CLI (``commands/``: arguments), jobs (``jobs/``: what each verb does),
built-in demos (``recipes/``), configuration, dependency-injection container, embedding API."""
