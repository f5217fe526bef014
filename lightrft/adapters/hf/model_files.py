"""Checks of a local model directory's weight files before ``from_pretrained`` reads them.

- Only safetensors are loaded. A directory holding pickled weights only (``*.bin``, ``*.pt``,
  ``*.pth``, ``*.ckpt``) is refused with the reason (unpickling runs code) and the one-line
  conversion to safetensors.
- ``config.json``, when there is one, must be a JSON object (named otherwise).
- Each safetensors file's header is read (not its data): a file too short for its header, a
  header that is not JSON, or tensor data that ends past the end of the file (a truncated
  copy) is reported by name, with the advice to export it again. A sharded model's index
  must name files that exist.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")
INDEX_FILE = "model.safetensors.index.json"
TOKENIZER_FILES = ("tokenizer.json", "*.model", "vocab.json", "vocab.txt", "*.tiktoken")
"""Globs of the files one of which a loadable tokenizer needs (its vocabulary)."""
_MAX_HEADER = 100 << 20  # the safetensors format's own limit on the JSON header


class ModelFilesError(ValueError):
    """A model directory whose weights cannot or must not be loaded; names the file."""


def check_model_directory(directory: Path) -> None:
    """Raises :class:`ModelFilesError` for the problems listed in the module docstring."""
    directory = Path(directory)
    check_model_config(directory / "config.json")
    safetensors = sorted(directory.glob("*.safetensors"))
    if not safetensors:
        pickled = sorted(p.name for p in directory.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickled:
            raise ModelFilesError(_pickle_only_message(directory, pickled))
        raise ModelFilesError(
            f"{directory} holds no model weights: expected model.safetensors (or the shards "
            f"that model.safetensors.index.json lists); found {_listing(directory)}"
        )
    for path in safetensors:
        check_safetensors_file(path)
    index = directory / INDEX_FILE
    if index.is_file():
        _check_index(index)


def check_model_config(path: Path) -> None:
    """A ``config.json`` that is not a JSON object is refused naming the file (transformers'
    own message is not a model-files error)."""
    if not path.is_file():
        return
    try:
        config = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ModelFilesError(f"{path} is not UTF-8 text (byte {error.start})") from None
    except (ValueError, RecursionError) as error:
        raise ModelFilesError(
            f"{path} is not valid JSON ({error}); restore the model's config.json"
        ) from None
    if not isinstance(config, dict):
        raise ModelFilesError(f"{path} holds a JSON {type(config).__name__}, not an object")


def check_safetensors_file(path: Path) -> None:
    """Reads the header of one safetensors file; raises :class:`ModelFilesError` if the file
    is truncated or not a safetensors file."""
    size = path.stat().st_size
    advice = "export the model again (save_pretrained) or copy the file again"
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise ModelFilesError(f"{path} is {size} bytes, too short for safetensors; {advice}")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len > min(size - 8, _MAX_HEADER):
            raise ModelFilesError(
                f"{path} is not a readable safetensors file (its header claims {header_len} "
                f"bytes, the file has {size}): corrupt or truncated; {advice}"
            )
        try:
            header = json.loads(f.read(header_len))
        except ValueError:
            raise ModelFilesError(
                f"{path} has a corrupt safetensors header (not JSON); {advice}"
            ) from None
    if not isinstance(header, dict):
        raise ModelFilesError(f"{path} has a corrupt safetensors header; {advice}")
    ends = [
        int(entry["data_offsets"][1])
        for name, entry in header.items()
        if name != "__metadata__" and isinstance(entry, dict) and "data_offsets" in entry
    ]
    needed = 8 + header_len + max(ends, default=0)
    if needed > size:
        raise ModelFilesError(
            f"{path} is truncated: its header describes {needed} bytes, the file has {size}; "
            f"{advice}"
        )


def _check_index(index: Path) -> None:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ModelFilesError(f"{index} is not a valid safetensors index") from None
    missing = [name for name in shards if not (index.parent / name).is_file()]
    if missing:
        raise ModelFilesError(
            f"{index} lists weight files that are missing: {', '.join(missing)}; copy the "
            "whole model directory again"
        )


def check_tokenizer_directory(directory: Path) -> None:
    """Raises :class:`ModelFilesError` naming what is missing when ``directory`` holds no
    tokenizer vocabulary (``transformers`` would only advise installing sentencepiece)."""
    directory = Path(directory)
    if not any(any(directory.glob(pattern)) for pattern in TOKENIZER_FILES):
        raise ModelFilesError(
            f"{directory} has no tokenizer files: expected tokenizer.json (or a vocabulary: "
            "tokenizer.model, vocab.json with merges.txt, or vocab.txt) next to "
            f"tokenizer_config.json; found {_listing(directory)}. Copy them from the base "
            "model (tokenizer.save_pretrained(DIR))"
        )


def _listing(directory: Path, limit: int = 12) -> str:
    names = sorted(p.name for p in directory.iterdir())
    if not names:
        return "nothing (the directory is empty)"
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _pickle_only_message(directory: Path, pickled: list[str]) -> str:
    out = f"{directory}-safetensors"
    return (
        f"{directory} holds only pickled weights ({', '.join(pickled)}). LightRFT loads "
        "safetensors only: unpickling a file can run arbitrary code. If you trust the file, "
        "convert it once:\n"
        '  python -c "from transformers import AutoModelForCausalLM as M, AutoTokenizer as T; '
        f"M.from_pretrained('{directory}').save_pretrained('{out}'); "
        f"T.from_pretrained('{directory}').save_pretrained('{out}')\"\n"
        f"then set model.path={out}"
    )
