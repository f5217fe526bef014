"""``model.modality``: ``auto`` (the default) reads it from the checkpoint, once, while the
config is validated, so the resolved value is what ``config show`` prints and a run
directory's ``config.yaml`` records.

A Qwen2-VL / Qwen2.5-VL directory runs as ``vision-language``, Qwen2-Audio as
``audio-language``, Qwen2.5-Omni as ``omni`` (its ``config.json`` says which); any other
model, and the embedded default (SmolLM2, a GGUF file), as ``text``. ``text`` set explicitly
(the original LightRFT's ``--text_only``) forces text; another modality set explicitly must
be the checkpoint's. A ``model.path`` that cannot be read (not there yet, a repo id not in
the local cache) is taken as text, as before ``auto`` existed; loading it then says what is
missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lightrft.adapters.hf.checkpoint_modality import CheckpointModality

MODALITIES = ("auto", "text", "vision-language", "audio-language", "omni")
DEFAULT_MODEL = "the embedded SmolLM2-135M-Instruct"
MEDIA_KEYS = (
    ("images_key", "images", "vision-language"),
    ("audios_key", "audio", "audio-language"),
)
"""A dataset's media columns: the key, what it gives the rows, the modality that reads it."""


def choose_modality(requested: str, path: Any) -> str:
    """The modality of a model section asking for ``requested`` with ``model.path`` ``path``
    (``auto``: text when the checkpoint cannot be read). Raises ``ValueError`` (one line,
    naming the key and the checkpoint) when ``requested`` is a multimodal modality the
    checkpoint does not hold."""
    if requested == "text":  # forced (--text_only): the checkpoint is not read
        return requested
    found = _checkpoint_of(path)
    if requested == "auto":
        return found.modality if found else "text"
    if found is not None and requested != found.modality:
        from lightrft.adapters.hf.checkpoint_modality import FAMILIES_OF

        raise ValueError(
            f"model.modality={requested} but {found.describe()}; set model.modality=auto "
            f"(read from the checkpoint) or point model.path at a {FAMILIES_OF[requested]} "
            "checkpoint"
        )
    return requested


class _EmbeddedModel:
    """The checkpoint of ``model.path: null``: the embedded SmolLM2, a text model (known
    without reading it, or importing the HF adapters)."""

    modality = "text"

    def describe(self) -> str:
        return f"{DEFAULT_MODEL} holds a text model (a GGUF file)"


def _checkpoint_of(path: Any) -> CheckpointModality | _EmbeddedModel | None:
    if path is None:
        return _EmbeddedModel()
    if not isinstance(path, str) or not path:
        return None  # the field's own validation names it
    # imported here: the HF adapters (transformers) load only for a config naming a model
    from lightrft.adapters.hf.checkpoint_modality import checkpoint_modality

    return checkpoint_modality(path)


def requested_modality(data: Any) -> str | None:
    """The ``model.modality`` a raw run config asks for (absent: ``auto``); None when the
    model section is not a mapping (an already-built section)."""
    if not isinstance(data, dict):
        return None
    model = data.get("model", {})
    return model.get("modality", "auto") if isinstance(model, dict) else None


def media_keys_problem(modality: str, path: Any, datasets: dict[str, Any]) -> str | None:
    """The one-line problem of rows given images or audio (``images_key`` / ``audios_key``
    of the sections ``datasets``, by key) while ``auto`` found a text model in ``path``;
    None when there is none. (An explicit ``text``, ``--text_only``, is the user's choice:
    the engine then refuses a row that does carry media.)"""
    if modality != "text":
        return None
    given = [
        (f"{name}.{key}", getattr(dataset, key), media, reader)
        for name, dataset in datasets.items()
        if dataset is not None
        for key, media, reader in MEDIA_KEYS
        if getattr(dataset, key)
    ]
    found = _checkpoint_of(path) if given else None
    if found is None:
        return None
    from lightrft.adapters.hf.checkpoint_modality import FAMILIES_OF

    key, column, media, reader = given[0]
    return (
        f"{key}={column} gives the rows {media} but {found.describe()}, so model.modality "
        f"auto is text: point model.path at a {FAMILIES_OF[reader]} checkpoint or drop {key}"
    )
    for name, dataset in datasets.items():
        if dataset is None:
            continue
        for key, media, reader in MEDIA_KEYS:
            column = getattr(dataset, key)
            if column:
                return (
                    f"{name}.{key}={column} gives the rows {media} but {found.describe()}, "
                    f"so model.modality auto is text: point model.path at a "
                    f"{FAMILIES_OF[reader]} checkpoint or drop {name}.{key}"
                )
    return None
