"""What each `lightrft` verb does: one module per job, called by the verb's thin
``commands/<verb>.py`` (which only parses arguments) and by the recipes of ``recipes/``.

A job takes a validated config (or a small options dataclass) and returns its summary; what
it needs is built by its verb's root (``roots/``), never by ``wiring/`` builders it imports
itself; it never imports ``commands/`` or ``recipes/`` (an import-linter contract and
``tests/architecture/test_job_shape.py`` hold this).
"""
