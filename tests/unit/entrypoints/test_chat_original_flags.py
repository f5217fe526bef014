"""`lightrft chat` with the original's chat.sh / test_chat.py flags: its four modes as
sampling settings, the batch-file mode (results equal to answering each query alone), image
inputs for a vision-language model and a clear error for a text one."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import torch

from lightrft.adapters.hf import load_causal_lm, load_tokenizer
from lightrft.adapters.hf.chat import HfChat
from lightrft.adapters.hf.rollout import HfRolloutEngine
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.jobs import chat as chat_job
from lightrft.entrypoints.jobs.chat import ChatOptions, chat, read_batch
from tests.helpers.tiny_multimodal import noise_image, save_tiny_vl_model

# chat.sh's python lines, one per mode (MODEL_PATH, BATCH_FILE, OUTPUT_FILE replaced)
CHAT_SH = {
    "interactive": "--model_path {MODEL}",
    "batch": "--model_path {MODEL} --batch {BATCH} --output {OUT}",
    "greedy": "--model_path {MODEL} --temperature 0.0",
    "creative": "--model_path {MODEL} --temperature 1.0 --top_p 0.9",
}


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[ChatOptions]:
    """The options `lightrft chat` runs with (the model is not loaded)."""
    seen: list[ChatOptions] = []
    monkeypatch.setattr(chat_job, "chat", lambda options: seen.append(options) or 0)
    return seen


@pytest.mark.parametrize("mode", sorted(CHAT_SH))
def test_each_chat_sh_command_line_is_accepted(
    mode: str, tmp_path: Path, captured: list[ChatOptions]
) -> None:
    line = CHAT_SH[mode].format(MODEL=tmp_path, BATCH=tmp_path / "q.json", OUT=tmp_path / "r.json")
    assert main(["chat", *shlex.split(line)]) == 0
    [options] = captured
    assert options.model == tmp_path
    expected = {
        "interactive": (0.7, 0.9, None),
        "batch": (0.7, 0.9, tmp_path / "q.json"),
        "greedy": (0.0, 0.9, None),
        "creative": (1.0, 0.9, None),
    }[mode]
    assert (options.temperature, options.top_p, options.batch) == expected


def test_modes_are_sampling_settings_and_explicit_values_win(
    tmp_path: Path, captured: list[ChatOptions]
) -> None:
    argv = ["chat", "--pretrain", str(tmp_path), "--max_tokens", "12"]
    assert main([*argv, "--mode", "greedy"]) == 0
    assert main([*argv, "--mode", "creative", "--top_p", "0.5"]) == 0
    assert main([*argv, "--generate_max_len", "7", "--system_prompt", "be: brief"]) == 0
    greedy, creative, plain = captured
    assert (greedy.temperature, greedy.max_new_tokens) == (0.0, 12)
    assert (creative.temperature, creative.top_p) == (1.0, 0.5)
    assert (plain.max_new_tokens, plain.system) == (7, "be: brief")


def test_every_problem_of_the_command_line_at_once(
    captured: list[ChatOptions], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["chat", "--mode", "batch", "--use_vllm", "--top_p", "2", "--flash_attn"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--use_vllm, --flash_attn" in err
    assert "--top-p in (0, 1]" in err and "--mode batch needs --batch FILE" in err
    assert not captured


def direct_reply(model_dir: Path, query: str, tokens: int) -> str:
    """The greedy reply of a fresh conversation, straight from HfChat."""
    cpu = torch.device("cpu")
    session = HfChat(
        load_causal_lm(model_dir, cpu),
        load_tokenizer(model_dir),
        cpu,
        SamplingParams(n=1, temperature=0.0, max_new_tokens=tokens),
    )
    return session.reply(query)


def test_batch_mode_answers_each_query_alone(tiny_dir: Path, tmp_path: Path) -> None:
    batch = tmp_path / "tests.json"
    queries = [{"query": "2+2?", "expected": "4"}, {"query": "say hi"}, {"query": "2+2?"}]
    batch.write_text(json.dumps(queries))
    results = tmp_path / "out" / "results.json"
    options = ChatOptions(tiny_dir, 5, 0.0, batch=batch, output=results, device="cpu")
    out = io.StringIO()
    assert chat(options, io.StringIO(""), out) == 0
    written = json.loads(results.read_text())
    assert [r["query"] for r in written] == ["2+2?", "say hi", "2+2?"]
    assert [r.get("expected") for r in written] == ["4", None, None]
    assert all(r["images"] == [] for r in written)
    # each query in a fresh conversation: the same reply as a direct first turn
    assert written[0]["response"] == direct_reply(tiny_dir, "2+2?", 5) == written[2]["response"]
    assert written[1]["response"] == direct_reply(tiny_dir, "say hi", 5)
    assert "[2/3] say hi" in out.getvalue()


def test_a_bad_batch_file_names_every_item(tmp_path: Path) -> None:
    batch = tmp_path / "b.json"
    batch.write_text(
        json.dumps([{"query": "ok"}, {"q": "x"}, {"query": "y", "images": ["no.png"]}])
    )
    with pytest.raises(ValueError) as err:
        read_batch(batch)
    assert str(err.value).splitlines() == [
        f"{batch} item 2: expected an object with a non-empty 'query' string",
        f"{batch} item 3: no image no.png",
    ]


def test_images_with_a_text_model_are_a_clear_error(tiny_dir: Path, tmp_path: Path) -> None:
    noise_image(16, 16, 0).save(tmp_path / "a.png")
    batch = tmp_path / "b.json"
    batch.write_text(json.dumps([{"query": "hi"}, {"query": "look", "images": ["a.png"]}]))
    options = ChatOptions(tiny_dir, 2, 0.0, batch=batch, device="cpu")
    with pytest.raises(ValueError, match=r"items \[2\]: images need a vision-language model"):
        chat(options, io.StringIO(""), io.StringIO())
    options = ChatOptions(tiny_dir, 2, 0.0, images=(tmp_path / "a.png",), device="cpu")
    with pytest.raises(ValueError, match=f"--image: .* but {tiny_dir} holds a text model"):
        chat(options, io.StringIO("hi\n"), io.StringIO())


def test_a_vl_model_reads_the_images_of_a_batch_and_of_a_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = save_tiny_vl_model(tmp_path / "vl", byte_level=True)
    noise_image(32, 32, 0).save(tmp_path / "a.png")
    noise_image(32, 32, 1).save(tmp_path / "b.png")
    seen: list[dict[str, Any]] = []
    generate = HfRolloutEngine.generate

    def spy(self: HfRolloutEngine, prompts: Any, sampling: Any) -> Any:
        seen.extend(dict(p.multimodal) for p in prompts)
        return generate(self, prompts, sampling)

    monkeypatch.setattr(HfRolloutEngine, "generate", spy)
    batch = tmp_path / "b.json"
    items = [{"query": "two", "images": ["a.png", "b.png"]}, {"query": "none"}]
    batch.write_text(json.dumps(items))
    options = ChatOptions(model, 3, 0.0, batch=batch, output=tmp_path / "r.json", device="cpu")
    assert chat(options, io.StringIO(""), io.StringIO()) == 0
    assert [r["images"] for r in json.loads((tmp_path / "r.json").read_text())] == [
        ["a.png", "b.png"],
        [],
    ]
    assert len(seen[0]["image_tokens"]) == 2 and "pixel_values" in seen[0]
    assert "image_tokens" not in seen[1]
    # interactive: --image goes with the first query, /image with the next, then none
    seen.clear()
    lines = io.StringIO(f"first\nsecond\n/image {tmp_path / 'b.png'}\nthird\n")
    out = io.StringIO()
    options = ChatOptions(model, 3, 0.0, images=(tmp_path / "a.png",), device="cpu")
    assert chat(options, lines, out) == 0
    assert ["image_tokens" in s for s in seen] == [True, False, True]
    assert "/image PATH adds an image" in out.getvalue().splitlines()[0]
