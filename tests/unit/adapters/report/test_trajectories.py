"""The trajectory browser page: valid, escaped, filterable without scripts, fast."""

from __future__ import annotations

import time
from html.parser import HTMLParser
from pathlib import Path

from lightrft.adapters.report import render_report
from lightrft.adapters.report.reading import read_jsonl
from lightrft.adapters.report.svg_histogram import histogram_counts
from lightrft.adapters.report.trajectories import build_trajectory_page
from lightrft.adapters.tracking.jsonl_tracker import JsonlTracker

VOID = {"meta", "br", "input", "img", "link", "hr", "rect"}


class Checker(HTMLParser):
    """Records start tags, text, and whether every non-void element was closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Checker:
    checker = Checker()
    checker.feed(page)
    checker.close()
    assert not checker.errors, checker.errors[:5]
    assert checker.stack == [], checker.stack
    return checker


def row(step: int, reward: float, response: str = "4", **extra: object) -> dict:
    tokens = list(response)
    return {
        "step": step,
        "prompt": "2+2?",
        "response": response,
        "reward": reward,
        "rewards": {"math": reward},
        "advantage": reward - 0.5,
        "length": len(tokens),
        "finish_reason": "stop",
        "group": 0,
        "tokens": tokens,
        "logprobs": [-0.1 * (i + 1) for i in range(len(tokens))],
        "entropy": [0.5] * len(tokens),
        "advantages": [reward - 0.5] * len(tokens),
        **extra,
    }


def test_page_is_valid_and_script_stays_text() -> None:
    evil = "<script>alert(1)</script>"
    rows = [row(1, 0.0, evil), row(2, 1.0), row(2, 0.5, "x", rollout_logprobs=[-0.3])]
    checker = parse(build_trajectory_page("run <b>", rows))
    assert not any(tag == "script" for tag, _ in checker.tags)
    assert any(evil in "".join(checker.text) for _ in [0])  # the characters survive as text
    assert "run <b>" in "".join(checker.text)
    csp = [a["content"] for t, a in checker.tags if t == "meta" and "content" in a]
    assert any("script-src 'none'" in (c or "") for c in csp)


def test_steps_bands_and_token_shading_are_marked_up() -> None:
    rows = [row(1, 0.0), row(1, 1.0, "ab"), row(3, 0.25)]
    checker = parse(build_trajectory_page("r", rows))
    sections = [a.get("id") for t, a in checker.tags if t == "section"]
    assert sections == ["step-1", "step-3"]
    bands = [a.get("class") for t, a in checker.tags if t == "article"]
    assert bands == ["b-neg", "b-pos", "b-mid"]
    spans = [a for t, a in checker.tags if t == "span"]
    # "ab": logprobs -0.1, -0.2 -> p 0.905, 0.819 -> levels 7, 6 of 8; entropy 0.5/4 -> 1;
    # advantage 0.5 in [-2, 2] -> (2.5 / 4) * 8 = 5
    ab = spans[1:3]
    assert [s["class"] for s in ab] == ["t l7 e1 a5", "t l6 e1 a5"]
    inputs = {a.get("id") for t, a in checker.tags if t == "input"}
    assert {"band-all", "band-neg", "band-mid", "band-pos", "shade-lp", "shade-adv"} <= inputs


def test_mismatch_histogram_only_when_both_logprobs_exist() -> None:
    without = build_trajectory_page("r", [row(1, 1.0)])
    assert "rollout - training log-prob" not in without
    page = build_trajectory_page("r", [row(1, 1.0, "ab", rollout_logprobs=[-0.1, -0.25])])
    assert "rollout - training log-prob per token, step 1 (n=2" in page


def test_histogram_counts_by_hand() -> None:
    # [0, 1, 1, 2, 4] in 4 bins of width 1 over [0, 4]: 0 | 1 1 | 2 | 4 (max in last bin)
    assert histogram_counts([0, 1, 1, 2, 4], bins=4) == ([1, 2, 1, 1], 0, 4)
    assert histogram_counts([3, 3], bins=4) == ([0, 0, 2, 0], 3, 3)


def test_ten_thousand_samples_render_fast() -> None:
    rows = [
        row(step, (i % 3) / 2, "The answer is 42.") for step in range(1, 101) for i in range(100)
    ]
    # CPU time of this process, so other load on a shared machine does not count
    started = time.process_time()
    page = build_trajectory_page("big", rows)
    elapsed = time.process_time() - started
    assert elapsed < 4.0, elapsed
    assert page.count("<article") == 10_000 and page.count('<section class="step"') == 100


def test_render_report_writes_and_links_the_browser(tmp_path: Path) -> None:
    tracker = JsonlTracker(tmp_path)
    tracker.log_metrics({"reward/mean": 0.5}, 1)
    for step in (1, 2):
        rows = [row(step, 1.0, "<script>x</script>") for _ in range(3)]
        tracker.log_samples([{k: v for k, v in r.items() if k != "step"} for r in rows], step)
    tracker.close()
    report = render_report(tmp_path)
    assert '<a href="trajectories.html">Trajectory browser (6 samples)</a>' in report.read_text()
    page = (report.parent / "trajectories.html").read_text()
    assert page == build_trajectory_page(tmp_path.name, read_jsonl(tmp_path / "samples.jsonl"))
    assert not any(tag == "script" for tag, _ in parse(page).tags)


def test_multi_turn_samples_show_turns_and_mark_observations_as_not_trained() -> None:
    turns = [
        {"text": '<tool_call>{"name": "calculator"}</tool_call>', "trained": True, "tokens": 9},
        {
            "text": "<|im_end|>\n<|im_start|>tool\n408<script>x</script>",
            "trained": False,
            "tokens": 7,
        },
        {"text": "The answer is 408.", "trained": True, "tokens": 6},
    ]
    sample = row(
        3,
        1.0,
        "The answer is 408.",
        turns=turns,
        loss_mask=[1] * 9 + [0] * 7 + [1] * 6,
        turn_rewards=[0.0, 1.0],
        end_reason="done",
        counters={"tool_calls": 1.0},
    )
    page = build_trajectory_page("run", [sample])
    checker = parse(page)
    blocks = [attrs.get("class") for tag, attrs in checker.tags if tag == "div"]
    assert blocks.count("turn gen") == 2 and blocks.count("turn obs") == 1
    text = "".join(checker.text)
    assert "observation \u00b7 7 tokens \u00b7 not trained (loss mask 0)" in text
    assert "model turn 2 \u00b7 6 tokens \u00b7 trained (loss mask 1)" in text
    assert "ended: done" in text and "tool_calls: 1" in text
    assert "<script>" not in page.split("<body>")[1].replace("&lt;script&gt;", "")
