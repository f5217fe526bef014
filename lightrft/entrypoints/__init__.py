"""Composition root: CLI (``commands/``: arguments), jobs (``jobs/``: what each verb does),
built-in demos (``recipes/``), one composition root per verb (``roots/``: what it builds),
configuration, dependency-injection container, embedding API."""
