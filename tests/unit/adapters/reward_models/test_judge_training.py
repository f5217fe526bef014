"""Judge training pieces: an encoded row's context is exactly the prompt the generative_rm
source gives its judge (chat template and plain), its trained tokens are the judgement +
EOS; verdict accuracy goes through the source's own prompts and parser."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from lightrft.adapters.reward_models.generative import HfGenerativeRewardModel
from lightrft.adapters.reward_models.judge_training import (
    JudgeEncoding,
    judge_samples,
    judge_verdict_accuracy,
)
from lightrft.adapters.reward_models.verdict import ScoreVerdict
from lightrft.domain.judge import JudgedResponse
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.unit.adapters.hf.hf_tiny import EOS, tiny_tokenizer

TEMPLATE = "Q {prompt}\nA {response}\nR {reference}\nV "
ROWS = [
    JudgedResponse("r0", "2+2?", "4", "Right.\nScore: 9/10", 0.9, reference="4"),
    JudgedResponse("r1", "2+3?", "6", "Wrong.\nScore: 1/10", 0.1),
    JudgedResponse("r2", "2+5?", "7", "Right.\nScore: 9/10", 0.9),
    JudgedResponse("r3", "1+1?", "3", "Wrong.\nScore: 1/10", 0.1),
]


class ScriptedJudgeEngine:
    """A RolloutEngine whose verdict for a prompt is looked up by the response it contains;
    records the prompts it was asked."""

    def __init__(self, verdicts: dict[str, str]) -> None:
        self.verdicts, self.prompts = verdicts, []  # type: ignore[var-annotated]
        self.awake = False

    def generate(self, prompts: Sequence[PromptRecord], sampling: SamplingParams) -> list[Any]:
        assert self.awake and sampling.temperature == 0.0
        self.prompts.extend(prompts)
        out = []
        for i, prompt in enumerate(prompts):
            response = prompt.prompt_text.split("\nA ")[1].split("\n")[0]
            out.append(Completion(i, (5,), self.verdicts[response], "stop"))
        return out

    def load_weights(self, weights: Any) -> None: ...

    def sleep(self) -> None:
        self.awake = False

    def wake_up(self) -> None:
        self.awake = True

    @property
    def is_awake(self) -> bool:
        return self.awake

    @property
    def shares_policy_weights(self) -> bool:
        return False


@pytest.mark.parametrize("chat", [True, False])
def test_context_is_the_sources_prompt_and_the_answer_is_trained(chat: bool) -> None:
    tok = tiny_tokenizer()
    encoding = JudgeEncoding(tok, TEMPLATE, max_length=None, use_chat_template=chat)
    source = HfGenerativeRewardModel(
        ScriptedJudgeEngine({}), tok, ScoreVerdict(10), template=TEMPLATE, use_chat_template=chat
    )
    for row, sample in zip(ROWS, judge_samples(ROWS), strict=True):
        example = encoding.example(row)
        assert example is not None
        assert example.prompt_ids == source.judge_prompt(sample).prompt_token_ids
        assert list(example.response_ids) == [*tok(row.judgement)["input_ids"], EOS]
        assert example.loss_mask == (1,) * len(example.response_ids)
    text = tok.decode(list(encoding.example(ROWS[0]).prompt_ids))  # type: ignore[union-attr]
    assert ("user: Q 2+2?" in text) == chat and "R 4\nV " in text


def test_the_default_follows_the_tokenizers_chat_template() -> None:
    tok = tiny_tokenizer()
    assert JudgeEncoding(tok).use_chat_template is True
    tok.chat_template = None
    assert JudgeEncoding(tok).use_chat_template is False


def test_rows_over_max_length_are_dropped_and_counted() -> None:
    tok = tiny_tokenizer()
    full = JudgeEncoding(tok, TEMPLATE, max_length=None).example(ROWS[1])
    assert full is not None
    size = full.num_tokens  # r1, r2, r3 have the same length; r0 has one more (its reference)
    encoding = JudgeEncoding(tok, TEMPLATE, max_length=size)
    kept = encoding.examples(ROWS)
    assert [e.uid for e in kept] == ["r1", "r2", "r3"] and encoding.too_long == 1
    with pytest.raises(ValueError, match="only"):
        JudgeEncoding(tok, "Grade {answer}")


def test_verdict_accuracy_through_the_source() -> None:
    engine = ScriptedJudgeEngine(
        {"4": "Fine.\nScore: 9/10", "6": "Fine.\nScore: 9/10", "7": "Hmm", "3": "Bad.\nScore: 1"}
    )
    tok = tiny_tokenizer()
    source = HfGenerativeRewardModel(engine, tok, ScoreVerdict(10), template=TEMPLATE)
    result, verdicts = judge_verdict_accuracy(source, ROWS, batch_size=3)
    # r0 right (0.9), r1 wrong (0.9 vs 0.1), r2 unparsable, r3 right ("Score: 1" on 0..10)
    assert (result.rows, result.correct, result.unparsable) == (4, 2, 1)
    assert verdicts == ["Fine.\nScore: 9/10", "Fine.\nScore: 9/10", "Hmm", "Bad.\nScore: 1"]
    encoding = JudgeEncoding(tok, TEMPLATE)
    assert [p.prompt_token_ids for p in engine.prompts] == [
        encoding.example(row).prompt_ids  # type: ignore[union-attr]
        for row in ROWS
    ]
