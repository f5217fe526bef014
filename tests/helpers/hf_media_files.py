"""Small dataset files in the layout of HF hub datasets with pictures and sound (no download).

``datasets`` stores an ``Image`` / ``Audio`` value as a ``{"bytes", "path"}`` struct and
declares the feature in the parquet schema's ``huggingface`` metadata, so readers decode it.
The files here are written with pyarrow in exactly that layout (``datasets`` itself cannot
encode ``Audio`` without ``torchcodec``), e.g. the Geo3K schema of ``hiyouga/geometry3k``:
``images`` (a list of ``Image``), ``problem`` (with ``<image>``), ``answer``.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

GEO3K_FEATURES = datasets.Features(
    {
        "images": datasets.List(datasets.Image()),
        "problem": datasets.Value("string"),
        "answer": datasets.Value("string"),
    }
)


def png_bytes(image: Image.Image) -> bytes:
    """``image`` encoded as PNG."""
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A mono float clip in [-1, 1] as 16-bit PCM ``.wav`` bytes."""
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()


def write_hf_parquet(
    path: Path, columns: Mapping[str, Sequence[Any]], features: datasets.Features
) -> Path:
    """``columns`` (media already as ``{"bytes", "path"}`` structs) written as ``datasets``
    writes parquet: the features' arrow types plus their ``huggingface`` metadata."""
    schema = features.arrow_schema
    table = pa.table({name: pa.array(values, type=schema.field(name).type)
                      for name, values in columns.items()}, schema=schema)  # fmt: skip
    pq.write_table(table, path)
    return path


def write_geo3k_parquet(path: Path, rows: Sequence[tuple[str, Sequence[Image.Image], str]]) -> Path:
    """A Geo3K-schema parquet of ``(problem, diagrams, answer)`` rows (diagrams as PNG)."""
    return write_hf_parquet(
        path,
        {
            "images": [
                [{"bytes": png_bytes(image), "path": None} for image in images]
                for _, images, _ in rows
            ],
            "problem": [problem for problem, _, _ in rows],
            "answer": [answer for _, _, answer in rows],
        },
        GEO3K_FEATURES,
    )
