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
    """``table`` (a ``datasets.Dataset``) with every column holding an ``Image`` / ``Audio``
    feature (alone or inside lists and structs) cast to ``decode=False``; other decoded
    features (e.g. the JSON of a mixed-type jsonl column) are kept; the table itself when
    no column holds media."""
    import datasets

    media = (datasets.Image, datasets.Audio)
    features = getattr(table, "features", None) or {}
    for column, feature in features.items():
        stored = stored_feature(feature, media)
        if stored != feature:
            table = table.cast_column(column, stored)
    return table


def stored_feature(feature: Any, media: tuple[type, ...]) -> Any:
    """``feature`` with ``decode=False`` on every ``media`` feature it holds (lists, structs
    and list wrappers such as ``datasets.List`` are followed; other features are kept)."""
    if isinstance(feature, dict):
        return {name: stored_feature(inner, media) for name, inner in feature.items()}
    if isinstance(feature, (list, tuple)):  # the old list-of-one-feature spelling
        return type(feature)(stored_feature(inner, media) for inner in feature)
    if isinstance(feature, media) and feature.decode:
        return dataclasses.replace(feature, decode=False)
    inner = getattr(feature, "feature", None)
    if inner is not None and dataclasses.is_dataclass(feature):  # List / LargeList of a feature
        return dataclasses.replace(feature, feature=stored_feature(inner, media))  # type: ignore[type-var]
    return feature
