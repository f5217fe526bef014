"""MathAnswerReward: extraction, equivalence, scores, metrics, hostile outputs, threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import structlog
import torch

from lightrft.adapters.rewards import MathAnswerReward
from lightrft.adapters.rewards.answer_check import check_response
from lightrft.adapters.rewards.answer_extraction import (
    ANSWER_EXTRACTORS,
    DEFAULT_EXTRACTORS,
    after_hashes,
    answer_phrase,
    extract_answer,
    last_boxed,
    last_number,
    reference_answer,
)
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, PromptRecord, RewardResult, RewardSample

GSM8K_REF = (
    "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nAltogether 48+24 = <<48+24=72>>72.\n#### 72"
)
LONG_REASONING = "Let me think about it. " * 5000  # ~115k characters

# (response, reference, expected verdict): at least 40 rows, covering numbers with commas,
# currency and units, percentages, fractions and decimals, LaTeX, negatives, wrong answers,
# empty and garbage outputs and very long outputs.
MATH_CASES: list[tuple[str, str, str]] = [
    # GSM8K "####" answers
    ("She has 3 + 4 = 7 apples.\n#### 7", "7", "correct"),
    ("#### 72", GSM8K_REF, "correct"),
    ("#### 71", GSM8K_REF, "incorrect"),
    ("Reasoning...\n#### 72 clips", GSM8K_REF, "correct"),
    ("#### 1,000", "1000", "correct"),
    ("#### 1000", "1,000", "correct"),
    ("#### 109,200,000", "109200000", "correct"),
    ("#### 1,234.5", "1234.50", "correct"),
    ("#### $18", "18", "correct"),
    ("#### \\$18.00", "18", "correct"),
    ("#### 18 dollars", "#### 18", "correct"),
    ("#### -3", "-3", "correct"),
    ("#### −3", "-3", "correct"),  # unicode minus
    ("#### 3", "-3", "incorrect"),
    ("#### -$5", "-5", "correct"),
    ("#### **18**.", "18", "correct"),  # markdown bold
    ("#### 18 (dollars)", "18", "correct"),
    ("#### The answer is 18", "18", "correct"),
    # boxed answers and LaTeX
    ("So the answer is $\\boxed{42}$.", "42", "correct"),
    ("\\boxed{\\frac{1}{2}}", "0.5", "correct"),
    ("\\boxed{\\dfrac{3}{4}}", "3/4", "correct"),
    ("\\boxed{-\\frac{2}{3}}", "-2/3", "correct"),
    ("\\boxed{\\frac{2}{4}}", "\\frac{1}{2}", "correct"),
    ("\\boxed{0.75}", "\\frac{3}{4}", "correct"),
    ("\\boxed{\\frac{1}{3}}", "0.33", "incorrect"),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", "correct"),
    ("\\boxed{\\sqrt{2}}", "\\sqrt{3}", "incorrect"),
    ("\\boxed{x^2+2x+1}", "(x+1)^2", "correct"),
    ("\\boxed{\\pi}", "\\pi", "correct"),
    ("\\boxed{18 \\text{ dollars}}", "18", "correct"),
    ("\\boxed{50\\%}", "50", "correct"),
    ("\\boxed{\\{1, 2\\}}", "\\{2, 1\\}", "correct"),
    ("first \\boxed{3} then corrected to \\boxed{4}", "4", "correct"),
    ("\\boxed{{5}}", "5", "correct"),
    # percentages and decimals
    ("The rate is 50%.", "0.5", "correct"),
    ("The rate is 50%.", "50", "correct"),
    ("The rate is 5%.", "50", "incorrect"),
    ("It costs 2.50", "2.5", "correct"),
    ("0.1 + 0.2 gives 0.3", "0.3", "correct"),
    # last-number fallback
    ("I think the answer is 15 apples", "15", "correct"),
    ("3 boxes of 4 make 12", "12", "correct"),
    ("3 boxes of 4 make 12", "13", "incorrect"),
    ("The total is -12.", "-12", "correct"),
    ("x = 5", "5", "correct"),
    # empty and garbage outputs
    ("", "5", "unparseable"),
    ("   \n  ", "5", "unparseable"),
    ("I don't know.", "5", "unparseable"),
    ("asdf qwerty !!! ???", "5", "unparseable"),
    ("#### ", "5", "unparseable"),  # nothing after the marker, nothing else either
    ("\\boxed{", "5", "unparseable"),  # cut-off box, no number
    ("#### banana", "5", "incorrect"),
    # very long outputs
    (LONG_REASONING + "\n#### 99", "99", "correct"),
    (LONG_REASONING + "\n#### 98", "99", "incorrect"),
    ("1 " * 20000 + "so \\boxed{2}", "2", "correct"),
    (LONG_REASONING, "99", "unparseable"),
]


# Final answers followed by more text or more numbers: the stated answer wins over the
# last number of the text (default extractors: gsm8k, boxed, answer_is, last_number).
TRAILING_CHATTER_CASES: list[tuple[str, str, str]] = [
    ("The answer is 5. I checked it with 2 and 3.", "5", "correct"),
    ("The answer is 5. I checked it with 2 and 3.", "3", "incorrect"),
    ("So the final answer is 12, since 3 * 4 = 12 and 12 - 0 = 12 for 7 days.", "12", "correct"),
    ("2 + 3 = 5 and 5 * 4 = 20. The answer is 20. That took 2 steps.", "20", "correct"),
    ("Answer: 7\nI used 3 and 4 to get there.", "7", "correct"),
    ("answer: -3. Check: -3 + 3 = 0, and 0 * 9 = 0.", "-3", "correct"),
    ("The answer is 2.5. Halving 5 gives 2.5, times 1 is 2.5, done in 3 lines.", "2.5", "correct"),
    ("The answer is 3/4. Three of four slices, 1 left.", "0.75", "correct"),
    ("The answer is 1,234. Adding 1 gives 1,235.", "1234", "correct"),
    ("The answer is $\\frac{1}{2}$. Both 2 and 4 agree.", "0.5", "correct"),
    ("The answer is **42**. Then 6 * 7 = 42 and 1 more.", "42", "correct"),
    ("Final answer: $18. The 3 items cost 6 each.", "18", "correct"),
    ("The answer is 50%. Out of 10, 5 passed.", "0.5", "correct"),
    ("\\boxed{12} I double-checked with 3 and 4.", "12", "correct"),
    ("The answer is 9.\n\nWait, no: \\boxed{10} since 5 + 5 = 10 and 2 more.", "10", "correct"),
    ("#### 42\nThat is 6 times 7, not 41.", "42", "correct"),
    ("The answer is 2^{10}. That is 1024 in 1 line.", "1024", "correct"),
    ("The answer is x = 5, so x + 1 = 6.", "5", "correct"),
    ("Reasoning with 3 and 8: the answer is 11", "11", "correct"),
]


def make_sample(
    response: str, reference: str | None, uid: str = "p0", prompt: str = "Q?"
) -> RewardSample:
    record = PromptRecord(uid=uid, prompt_text=prompt, prompt_token_ids=(1, 2), reference=reference)
    completion = Completion(prompt_index=0, token_ids=(5,), text=response, finish_reason="stop")
    return RewardSample(prompt=record, completion=completion)


def test_the_table_is_large_enough() -> None:
    assert len(MATH_CASES) >= 40


@pytest.mark.parametrize(("response", "reference", "expected"), MATH_CASES)
def test_math_verdicts(response: str, reference: str, expected: str) -> None:
    check = check_response(response, reference, timeout_seconds=5)
    assert check.verdict == expected
    assert not check.timed_out and not check.too_costly


def test_the_trailing_chatter_table_is_large_enough() -> None:
    assert len(TRAILING_CHATTER_CASES) >= 10


@pytest.mark.parametrize(("response", "reference", "expected"), TRAILING_CHATTER_CASES)
def test_stated_answer_wins_over_later_numbers(
    response: str, reference: str, expected: str
) -> None:
    assert check_response(response, reference, timeout_seconds=5) == (expected, False, False)
    reward = MathAnswerReward()
    score = float(reward.score([make_sample(response, reference)]).scores[0])
    assert score == (1.0 if expected == "correct" else 0.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 5. I checked it with 2 and 3.", "5"),
        ("The answer is 3.5.", "3.5"),
        ("answer: -12, then more", "-12"),
        ("The answer is 1,234 in total", "1,234"),
        ("The answer is 1, 2 and 3.", "1, 2 and 3"),
        ("The answer is $x^2$. Next line", "$x^2$"),
        ("The answer is 2 + 3. Done", "2 + 3"),
        ("The answer is 2\\sqrt{2}. Done", "2\\sqrt{2}"),
        ("The answer is x = 5, so x + 1 = 6.", "x = 5"),
        ("first the answer is 3. Later: the answer is 4.", "4"),
        ("no phrase here 5", None),
    ],
)
def test_answer_phrase_stops_at_the_end_of_the_answer(text: str, expected: str | None) -> None:
    assert answer_phrase(text) == expected


def test_default_extractors_try_the_answer_phrase_before_the_last_number() -> None:
    assert DEFAULT_EXTRACTORS == ("gsm8k", "boxed", "answer_is", "last_number")
    assert MathAnswerReward().extractors == DEFAULT_EXTRACTORS
    assert set(DEFAULT_EXTRACTORS) <= set(ANSWER_EXTRACTORS.names())


def test_unknown_extractor_error_names_the_parameter_and_the_choices() -> None:
    with pytest.raises(ValueError, match=r"extractors.*'lastnumber'.*answer_is, boxed"):
        MathAnswerReward(extractors=("boxed", "lastnumber"))
    with pytest.raises(ValueError, match="extractors"):
        MathAnswerReward(extractors=())


def test_scores_and_metrics_follow_the_verdicts() -> None:
    reward = MathAnswerReward(correct_score=1.0, incorrect_score=-0.5, unparseable_score=-1.0)
    samples = [
        make_sample("#### 7", "7"),
        make_sample("#### 8", "7"),
        make_sample("no answer here", "7"),
        make_sample("\\boxed{7}", "#### 7"),
    ]
    result = reward.score(samples)
    torch.testing.assert_close(result.scores, torch.tensor([1.0, -0.5, -1.0, 1.0]))
    assert result.scores.dtype == torch.float32
    assert float(result.metrics["accuracy"]) == pytest.approx(2 / 4)
    assert float(result.metrics["parse_failure_rate"]) == pytest.approx(1 / 4)
    assert float(result.metrics["timeouts"]) == 0.0


def test_conforms_to_the_reward_source_port() -> None:
    reward = MathAnswerReward(name="gsm8k_math")
    assert isinstance(reward, RewardSource)
    assert reward.name == "gsm8k_math"
    reward.onload()
    reward.offload()
    result = reward.score([])
    assert result.scores.shape == (0,)


def test_extractor_order_is_configurable() -> None:
    response = "\\boxed{3} and later #### 4"
    assert check_response(response, "4", extractors=("gsm8k", "boxed"))[0] == "correct"
    assert check_response(response, "4", extractors=("boxed", "gsm8k"))[0] == "incorrect"
    # Without the last-number fallback a bare number is no answer.
    assert check_response("it is 4", "4", extractors=("gsm8k", "boxed"))[0] == "unparseable"
    assert check_response("The answer is 4.", "4", extractors=("answer_is",))[0] == "correct"


def test_unknown_extractor_names_the_choices() -> None:
    with pytest.raises(KeyError, match="last_number"):
        MathAnswerReward(extractors=("gsm8k", "lastnumber"))


def test_missing_reference_is_an_error_naming_the_prompt() -> None:
    with pytest.raises(ValueError, match="'p9'"):
        MathAnswerReward().score([make_sample("#### 1", None, uid="p9")])


def test_extractors_individually() -> None:
    assert after_hashes("a\n#### 5\nmore") == "5"
    assert after_hashes("#### 1\n#### 2") == "2"
    assert after_hashes("none") is None
    assert last_boxed("\\boxed{\\frac{1}{2}} x") == "\\frac{1}{2}"
    assert last_boxed("\\fbox{7}") == "7"
    assert last_boxed("\\boxed{unclosed") is None
    assert answer_phrase("The final answer is: 12.") == "12"
    assert last_number("from 1,234 to 3/4") == "3/4"
    assert last_number("no digits") is None
    assert extract_answer("#### 3 and \\boxed{4}", ("boxed", "gsm8k")) == "4"
    assert reference_answer(GSM8K_REF) == "72"
    assert reference_answer("so $x = \\boxed{\\frac{1}{2}}$") == "\\frac{1}{2}"
    assert reference_answer(" 5 ") == "5"


def test_answers_longer_than_the_cap_are_unparseable() -> None:
    long_box = "\\boxed{" + "1+" * 400 + "1}"
    assert check_response(long_box, "401", max_answer_chars=100)[0] == "unparseable"
    assert check_response(long_box, "401", max_answer_chars=2000)[0] == "correct"


HOSTILE = [
    "__import__('os').system('touch {marker}')",
    "#### __import__('os').system('touch {marker}')",
    "\\boxed{{__import__('os').system('touch {marker}')}}",
    "The answer is: __import__('os').system('touch {marker}')",
    "$__import__('os').system('touch {marker}')$",
    "#### eval(\"__import__('os').system('touch {marker}')\")",
    "#### 1+__import__('os').system('touch {marker}')",
]


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_output_is_never_executed(template: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    response = template.format(marker=marker)
    reward = MathAnswerReward(extractors=("gsm8k", "boxed", "answer_is", "last_number"))
    result = reward.score([make_sample(response, "31415926"), make_sample(response, "-271828")])
    assert not marker.exists()
    assert float(result.scores.sum()) == 0.0


def test_hostile_output_with_the_literal_path_is_not_executed() -> None:
    marker = Path("/tmp/pwned")
    existed = marker.exists()
    reward = MathAnswerReward()
    reward.score([make_sample("#### __import__('os').system('touch /tmp/pwned')", "0")])
    assert marker.exists() == existed


def test_pathological_power_tower_is_refused_at_once() -> None:
    start = time.monotonic()
    check = check_response("\\boxed{10^{10^{10^{10}}}}", "1", timeout_seconds=1)
    assert check == ("incorrect", False, True)  # never handed to math-verify: no timeout
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("#### 5", "9" * 5000),  # Python's int parser refuses over 4300 digits
        ("#### " + "9" * 1001, "9"),
        ("\\boxed{9^{999999999}}", "9"),  # about 9.5e8 digits
        ("\\boxed{100000!}", "1"),  # 456,574 digits
        ("\\boxed{2}", "10**10**10"),
        ("\\boxed{(10^{10})!}", "1"),
    ],
)
def test_answers_too_costly_to_check_score_incorrect_quickly_and_are_counted(
    response: str, reference: str
) -> None:
    start = time.monotonic()
    result = MathAnswerReward(max_answer_chars=2000).score([make_sample(response, reference)])
    assert float(result.scores[0]) == 0.0
    assert float(result.metrics["too_costly"]) == 1.0 and float(result.metrics["timeouts"]) == 0
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize(
    "answer", ["2^{2^{10}}", "e^{x^2}", "20!", "(10^{2})!", "10^{300}", "x^2+y^2", "9" * 1000]
)
def test_costly_looking_but_cheap_answers_are_checked(answer: str) -> None:
    assert not check_response(f"\\boxed{{{answer}}}", "1", max_answer_chars=2000).too_costly


def test_off_the_main_thread_auto_uses_a_worker_process() -> None:
    reward = MathAnswerReward(timeout_seconds=1)
    results: list[object] = []

    def run() -> None:
        results.append(
            reward.score(
                [
                    make_sample("\\boxed{\\frac{1}{2}}", "0.5"),
                    make_sample("\\boxed{(x+1)^{3000}}", "1"),  # sympy expands past 1 s
                ]
            )
        )

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    try:
        (result,) = results
        assert isinstance(result, RewardResult)
        torch.testing.assert_close(result.scores, torch.tensor([1.0, 0.0]))
        assert float(result.metrics["timeouts"]) == 1.0
        assert reward._worker is not None and reward._worker.alive  # the check ran there
    finally:
        reward.close()


def test_hostile_output_is_not_executed_in_the_worker_either(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    reward = MathAnswerReward(isolation="process", timeout_seconds=1)
    try:
        samples = [make_sample(t.format(marker=marker), "31415926") for t in HOSTILE]
        result = reward.score(samples + [make_sample("#### 31,415,926", "31415926")])
    finally:
        reward.close()
    assert not marker.exists()
    assert result.scores.tolist() == [0.0] * len(HOSTILE) + [1.0]


def test_in_process_off_the_main_thread_warns_that_timeouts_are_off() -> None:
    reward = MathAnswerReward(isolation="in_process")
    results: list[RewardResult] = []
    with structlog.testing.capture_logs() as logs:
        thread = threading.Thread(
            target=lambda: results.append(reward.score([make_sample("#### 3", "3")]))
        )
        thread.start()
        thread.join(timeout=30)
    assert results[0].scores.tolist() == [1.0]
    assert [e["event"] for e in logs] == ["reward.math.timeout_disabled"]
    assert reward._worker is None
