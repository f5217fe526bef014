"""HF ``datasets`` media columns (``Image``, ``Audio``) read as stored, not decoded by ``datasets``.

A parquet / arrow file written by ``datasets`` (and every hub dataset with pictures or
sound, e.g. Geo3K's ``images`` column, a list of ``Image``) declares its media columns in
the schema's metadata; ``datasets`` then decodes them whenever a row is read. Reading a row
would hand decoding to libraries that may be missing (``Audio`` needs ``torchcodec`` in
``datasets`` >= 4, so *every* row of a file with an audio column fails, whatever its
other columns hold) and would raise errors that name no row. Here such columns are cast
to ``decode=False``: a row then holds the stored ``{"bytes": ..., "path": ...}`` structs, which
:mod:`~lightrft.adapters.datasets.multimodal_rows` decodes itself, naming the file, row and
key of anything it cannot read.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def undecoded_media(table: Any) -> Any:
    """``table`` (a ``datasets.Dataset``) with every column that ``datasets`` would decode
    (an ``Image`` / ``Audio`` feature, alone or inside lists and structs) cast to
    ``decode=False``; the table itself when it has none."""
    from datasets.features.features import require_decoding

    features = getattr(table, "features", None) or {}
    for column, feature in features.items():
        if require_decoding(feature):
            table = table.cast_column(column, stored_feature(feature))
    return table


def stored_feature(feature: Any) -> Any:
    """``feature`` with ``decode=False`` on every media feature it holds (lists, structs and
    list wrappers such as ``datasets.List`` are followed; other features are kept)."""
    if isinstance(feature, dict):
        return {name: stored_feature(inner) for name, inner in feature.items()}
    if isinstance(feature, (list, tuple)):  # the old list-of-one-feature spelling
        return type(feature)(stored_feature(inner) for inner in feature)
    if not dataclasses.is_dataclass(feature) or isinstance(feature, type):
        return feature
    inner = getattr(feature, "feature", None)
    if inner is not None:  # List / LargeList / Sequence of a feature
        return dataclasses.replace(feature, feature=stored_feature(inner))  # type: ignore[type-var]
    if getattr(feature, "decode", False):
        return dataclasses.replace(feature, decode=False)  # type: ignore[type-var]
    return feature
