"""What each `lightrft` verb does: one module per job, called by the verb's thin
``commands/<verb>.py`` (which only parses arguments) and by the recipes of ``recipes/``.

A job takes a validated config (or a small options dataclass) and returns its summary; it
never imports ``commands/`` or ``recipes/`` (an import-linter contract holds this).
"""
