"""The composition roots: one per verb, each building what its job needs, typed.

``docs/architecture.md`` lists them (verb -> root -> job). A job asks its root for its parts
and never imports a ``wiring/`` builder itself; the roots are the only callers of
``wiring/`` and of the dependency-injector :class:`~lightrft.entrypoints.container.Container`.
"""
