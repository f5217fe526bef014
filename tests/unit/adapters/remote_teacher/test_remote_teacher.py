"""A served teacher (SGLang's /generate, vLLM's /v1/completions) gives the log-probs the
training's no-grad forward uses, equal to a direct forward of the teacher model; retries,
typed errors naming the URL, the token-id check, and the tokenizer check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import torch

from lightrft.adapters.fakes import FakeCollective
from lightrft.adapters.remote_teacher import RemoteTeacher, RemoteTeacherError
from lightrft.adapters.reward_service import BackgroundServer
from lightrft.application.params import RolloutParams
from lightrft.application.stages.no_grad_forward import NoGradForward
from lightrft.domain.types import SequenceBatch
from lightrft.entrypoints.config.teacher_section import TeacherConfig, TeacherModelConfig
from lightrft.entrypoints.wiring.remote_teachers import build_remote_teacher
from tests.helpers.fake_teacher import FakeTeacher
from tests.unit.adapters.hf.hf_tiny import PAD, tiny_tokenizer

# three rows: left-padded prompts, right-padded responses (lengths 3, 2, 1 of R = 3)
PROMPTS = [[2, 40, 41, 42], [2, 50], [2, 60, 61]]
RESPONSES = [[70, 71, 72], [80, 81], [90]]


def batch() -> SequenceBatch:
    p, r = max(map(len, PROMPTS)), max(map(len, RESPONSES))
    ids = torch.full((3, p + r), PAD)
    mask = torch.zeros(3, p + r, dtype=torch.long)
    response_mask = torch.zeros(3, r)
    for i, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        ids[i, p - len(prompt) : p] = torch.tensor(prompt)
        ids[i, p : p + len(response)] = torch.tensor(response)
        mask[i, p - len(prompt) : p + len(response)] = 1
        response_mask[i, : len(response)] = 1
    return SequenceBatch(ids, mask, response_mask)


def direct(fake: FakeTeacher) -> torch.Tensor:
    """The teacher model's own log-probs of the response tokens, row by row, unpadded."""
    out = torch.zeros(3, 3)
    for i, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES, strict=True)):
        with torch.no_grad():
            logits = fake.model(torch.tensor([prompt + response])).logits[0]
        logprobs = logits.log_softmax(-1)
        for t, token in enumerate(response):
            out[i, t] = logprobs[len(prompt) + t - 1, token]
    return out


@pytest.fixture(scope="module")
def fake(tiny_dir: Path) -> FakeTeacher:
    return FakeTeacher(tiny_dir)


@pytest.fixture(scope="module")
def served(fake: FakeTeacher) -> Iterator[str]:
    with BackgroundServer(fake.app()) as server:
        yield server.url


@pytest.mark.parametrize("route", ["/generate", "/v1/completions"])
def test_the_training_forward_gets_the_teachers_own_logprobs(
    fake: FakeTeacher, served: str, route: str
) -> None:
    teacher = RemoteTeacher(served + route, request_batch=2)
    forward = NoGradForward(RolloutParams(forward_micro_batch_size=3), FakeCollective(), 1.0)
    seq = batch()
    before = fake.requests
    logprobs, entropy = forward.logprobs(teacher, seq, forward.batches(seq, torch.arange(3)), False)
    torch.testing.assert_close(logprobs, direct(fake), atol=1e-5, rtol=0)
    assert entropy is None
    assert fake.requests - before == 2 and fake.sizes[-2:] == [2, 1]  # batched by 2
    assert (logprobs[seq.response_mask == 0] == 0).all()
    teacher.close()


def test_failed_attempts_are_retried(fake: FakeTeacher, served: str) -> None:
    fake.failures = 2
    teacher = RemoteTeacher(served + "/generate", request_batch=8, sleep=lambda s: None)
    before = fake.requests
    out = teacher.forward(batch()).logprobs
    torch.testing.assert_close(out, direct(fake), atol=1e-5, rtol=0)
    assert fake.requests - before == 3


def test_an_unreachable_teacher_is_a_typed_error_naming_it() -> None:
    url = "http://127.0.0.1:9/generate"  # the discard port: nothing listens
    teacher = RemoteTeacher(url, max_attempts=2, sleep=lambda s: None)
    with pytest.raises(RemoteTeacherError, match="sglang teacher http://127.0.0.1:9 failed 2"):
        teacher.forward(batch())


def answering(body: object, status: int = 200) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(status, json=body))


def test_an_answer_for_other_tokens_is_refused() -> None:
    entries = [[None, 2, None], [-1.0, 41, None], [-1.0, 99, None]]
    teacher = RemoteTeacher(
        "http://t/generate", transport=answering([{"meta_info": {"input_token_logprobs": entries}}])
    )
    one = batch().select(torch.tensor([1]))  # ids 2, 50, 80, 81: other tokens answered
    with pytest.raises(
        RemoteTeacherError, match=r"http://t/generate.*token .* not the .* sent|4 tokens sent"
    ):
        teacher.forward(one)


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"detail": "bad"}, 400, "refused the request: HTTP 400"),
        ([{"text": ""}], 200, "without meta_info.input_token_logprobs"),
        ([], 200, "0 results for the 1 sequences"),
    ],
)
def test_bad_answers_are_typed_errors(body: object, status: int, words: str) -> None:
    teacher = RemoteTeacher("http://t:1/generate", transport=answering(body, status))
    with pytest.raises(RemoteTeacherError, match=words) as err:
        teacher.forward(batch().select(torch.tensor([2])))
    assert "http://t:1" in str(err.value)


def test_only_temperature_one_is_served() -> None:
    teacher = RemoteTeacher("http://t/generate", transport=answering([]))
    with pytest.raises(ValueError, match="logprob_temperature=1.0"):
        teacher.forward(batch(), temperature=0.7)


def test_a_url_of_another_server_is_refused() -> None:
    with pytest.raises(ValueError, match="/generate or /v1/completions"):
        RemoteTeacher("http://t/score")


def test_the_teachers_tokenizer_is_checked(served: str, tiny_dir: Path) -> None:
    config = TeacherModelConfig(url=served + "/generate")
    student = tiny_tokenizer()
    load = lambda where: tiny_tokenizer()  # noqa: E731 - the teacher's, as the server reports
    build_remote_teacher(config, student, "/student", load).close()
    other = tiny_tokenizer()
    other.add_tokens(["<extra>"])
    with pytest.raises(ValueError) as err:
        build_remote_teacher(config, other, "/student", load)
    text = str(err.value)
    assert "/student" in text and served in text and str(tiny_dir) in text


def test_a_teacher_reporting_no_local_directory_needs_its_tokenizer(tiny_dir: Path) -> None:
    fake = FakeTeacher(tiny_dir, report_dir="/elsewhere/Qwen2.5-7B")
    with BackgroundServer(fake.app()) as server:
        config = TeacherModelConfig(url=server.url + "/v1/completions")
        with pytest.raises(ValueError, match="teacher.models\\[i\\].tokenizer"):
            build_remote_teacher(config, tiny_tokenizer(), "/s", lambda where: tiny_tokenizer())
        named = TeacherModelConfig(url=server.url + "/v1/completions", tokenizer=str(tiny_dir))
        build_remote_teacher(named, tiny_tokenizer(), "/s", lambda where: tiny_tokenizer()).close()


def test_the_config_takes_a_path_or_a_url() -> None:
    assert TeacherConfig(url="http://h:1/generate").weighted() == [("http://h:1/generate", 1.0)]
    with pytest.raises(ValueError, match="path or teacher.url, not both"):
        TeacherConfig(path="/t", url="http://h/generate")
    with pytest.raises(ValueError, match="one of them"):
        TeacherModelConfig()
    with pytest.raises(ValueError, match="http:// or https://"):
        TeacherModelConfig(url="h:1/generate")
