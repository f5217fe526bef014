"""``model.modality: auto`` (the default): a checkpoint runs as what its ``config.json`` says
(Qwen2-VL / Qwen2.5-VL, Qwen2-Audio, Qwen2.5-Omni), a text model and the embedded default as
text; ``--text_only`` forces text; contradictions are one-line errors naming the key and the
checkpoint; the resolved modality is what the run directory records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lightrft.adapters.hf.checkpoint_modality import checkpoint_modality
from lightrft.entrypoints.config.loading import ConfigError, dump_config, load_config
from tests.helpers.original_scripts import script_args
from tests.helpers.tiny_multimodal import save_tiny_audio_model, save_tiny_vl_model
from tests.helpers.tiny_omni import save_tiny_omni_thinker


def config_only(directory: Path, config: dict[str, object]) -> Path:
    """A checkpoint directory holding nothing but ``config.json``."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="module")
def vl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_vl_model(tmp_path_factory.mktemp("vl") / "model")


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_audio_model(tmp_path_factory.mktemp("audio") / "model")


def modality(*overrides: str) -> str:
    return load_config(overrides=list(overrides), algorithm="grpo").model.modality


def test_saved_tiny_models_run_as_their_modality(
    vl_dir: Path, audio_dir: Path, tiny_dir: Path, tmp_path: Path
) -> None:
    assert modality(f"model.path={vl_dir}") == "vision-language"
    assert modality(f"model.path={audio_dir}") == "audio-language"
    assert modality(f"model.path={save_tiny_omni_thinker(tmp_path / 'omni')}") == "omni"
    assert modality(f"model.path={tiny_dir}") == "text"  # a Llama
    assert modality() == "text"  # the embedded SmolLM2 (a GGUF file)
    assert load_config().model.modality == "text"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"model_type": "qwen2_5_vl"}, "vision-language"),
        ({"model_type": "qwen2_vl"}, "vision-language"),
        ({"model_type": "qwen2_audio"}, "audio-language"),
        ({"model_type": "qwen2_5_omni"}, "omni"),  # the whole model: its loader says to save
        ({"model_type": "qwen2"}, "text"),
        ({"architectures": ["Qwen2_5_VLForConditionalGeneration"]}, "vision-language"),
        (
            {"model_type": "x", "architectures": ["Qwen2AudioForConditionalGeneration"]},
            "audio-language",
        ),
        ({"architectures": ["LlamaForCausalLM"]}, "text"),
    ],
)
def test_config_json_decides(tmp_path: Path, config: dict[str, object], expected: str) -> None:
    path = config_only(tmp_path / "m", config)
    assert modality(f"model.path={path}") == expected
    found = checkpoint_modality(path)
    assert found is not None and found.modality == expected


def test_a_hub_cache_directory_is_read_through_its_snapshot(tmp_path: Path) -> None:
    repo = tmp_path / "models--Qwen--Qwen2.5-VL-7B-Instruct"
    config_only(repo / "snapshots" / "abc123", {"model_type": "qwen2_5_vl"})
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    assert modality(f"model.path={repo}") == "vision-language"


def test_an_unreadable_path_is_text_as_before(tmp_path: Path) -> None:
    assert modality(f"model.path={tmp_path / 'not-yet'}") == "text"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    assert modality(f"model.path={tmp_path / 'broken'}") == "text"


def test_text_only_forces_text(vl_dir: Path) -> None:
    assert modality(f"model.path={vl_dir}", "--text_only") == "text"
    assert modality(f"model.path={vl_dir}", "model.modality=text") == "text"


def test_a_matching_explicit_modality_is_kept(vl_dir: Path) -> None:
    assert modality(f"model.path={vl_dir}", "model.modality=vision-language") == "vision-language"


@pytest.mark.parametrize(
    ("which", "setting", "checkpoint"),
    [
        ("text", "vision-language", "holds a text model (model_type 'llama')"),
        ("vl", "audio-language", "holds a vision-language model (model_type 'qwen2_vl')"),
        ("audio", "omni", "holds an audio-language model (model_type 'qwen2_audio')"),
    ],
)
def test_an_explicit_modality_the_checkpoint_contradicts_is_one_line(
    which: str, setting: str, checkpoint: str, tiny_dir: Path, vl_dir: Path, audio_dir: Path
) -> None:
    path = {"text": tiny_dir, "vl": vl_dir, "audio": audio_dir}[which]
    with pytest.raises(ConfigError) as err:
        load_config(overrides=[f"model.path={path}", f"model.modality={setting}"])
    problems = str(err.value).splitlines()[1:]
    assert len(problems) == 1
    assert f"model.modality={setting} but {path} {checkpoint}" in problems[0]


@pytest.mark.parametrize(("key", "media"), [("images_key", "images"), ("audios_key", "audio")])
def test_media_rows_with_a_text_checkpoint_are_one_line(
    tiny_dir: Path, key: str, media: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides=[f"model.path={tiny_dir}", f"data.train.{key}=cols"])
    problems = str(err.value).splitlines()[1:]
    assert problems == [
        f"  data.train.{key}=cols gives the rows {media} but {tiny_dir} holds a text model "
        f"(model_type 'llama'), so model.modality auto is text: point model.path at a "
        f"{'Qwen2-VL, Qwen2.5-VL or InternVL' if media == 'images' else 'Qwen2-Audio'} checkpoint or "
        f"drop data.train.{key}"
    ]
    # --text_only says the text is what to train on: no contradiction at config time
    config = load_config(
        overrides=[f"model.path={tiny_dir}", f"data.train.{key}=cols", "--text_only"]
    )
    assert config.model.modality == "text"


def test_the_original_geo3k_script_runs_as_a_vl_model_without_a_flag(
    vl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "8")
    args = script_args("geo3k", MODEL=str(vl_dir), DATA=str(tmp_path / "data"), OUT=str(tmp_path))
    config = load_config(overrides=args, algorithm="grpo")
    assert config.model.modality == "vision-language"
    assert config.data.train.images_key == "images"


def test_the_resolved_modality_is_what_the_run_records(vl_dir: Path, tmp_path: Path) -> None:
    config = load_config(overrides=[f"model.path={vl_dir}"])
    saved = yaml.safe_load(dump_config(config))
    assert saved["model"]["modality"] == "vision-language"
    (tmp_path / "config.yaml").write_text(dump_config(config))
    assert load_config(tmp_path / "config.yaml") == config  # re-read: the same run
