"""Built-in recipes: the demos' settings (``key=value`` override lists on top of a preset) and
the multi-stage demos composed of jobs, one module per recipe. A recipe may import
``jobs/``; no job imports a recipe (an import-linter contract holds this)."""
