"""`lightrft chat`: a conversation through the chat template, from piped input."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch

from lightrft.adapters.hf import load_causal_lm, load_tokenizer
from lightrft.adapters.hf.chat import HfChat
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.jobs.chat import ChatOptions, chat

CPU = torch.device("cpu")


def test_each_line_gets_a_reply_and_reset_forgets(tiny_dir: Path) -> None:
    out = io.StringIO()
    options = ChatOptions(tiny_dir, max_new_tokens=3, temperature=0.0)
    assert chat(options, io.StringIO("hello\n\n/reset\nagain\n/exit\nnot read\n"), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"chatting with {tiny_dir}")
    assert [line.split(">")[0] for line in lines[1:]] == ["model", "(conversation reset)", "model"]


def test_the_conversation_is_rendered_with_the_chat_template(tiny_dir: Path) -> None:
    tokenizer = load_tokenizer(tiny_dir)
    session = HfChat(
        load_causal_lm(tiny_dir, CPU),
        tokenizer,
        CPU,
        SamplingParams(n=1, temperature=0.0, max_new_tokens=2),
        system="be brief",
    )
    first = session.reply("one")
    session.reply("two")
    assert [m["role"] for m in session.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert session.messages[2]["content"] == first
    rendered = tokenizer.apply_chat_template(
        session.messages[:4], tokenize=False, add_generation_prompt=True
    )
    assert "be brief" in rendered and "one" in rendered and "two" in rendered
    session.reset()
    assert session.messages == [{"role": "system", "content": "be brief"}]


def test_bad_sampling_options_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "--temperature", "-1"]) == 2
    assert "--temperature >= 0" in capsys.readouterr().err
