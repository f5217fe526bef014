"""render_report: plots from a JsonlTracker run, escaped samples, before/after evaluation."""

from __future__ import annotations

import types
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lightrft.adapters.report import plots as plots_module
from lightrft.adapters.report import render_report
from lightrft.adapters.tracking import JsonlTracker

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALL_PLOTS = {
    "reward.png",
    "accuracy.png",
    "response_length.png",
    "kl.png",
    "entropy.png",
    "clip_fraction.png",
    "grad_norm.png",
    "lr.png",
    "step_time.png",
}
EVIL = '<script>alert("pwned")</script> & <img src=x onerror=alert(1)>'


class _Page(HTMLParser):
    """Collects table cell texts (by table id / class), img sources and script tags."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self.scripts = 0
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._count = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._count += 1
            self._table = a.get("id") or f"{a.get('class')}-{self._count}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(str(a["src"]))
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _write_run(run_dir: Path) -> None:
    """A 10-step run: evaluation at steps 0 and 10, samples at steps 1, 5 and 10."""
    tracker = JsonlTracker(run_dir, clock=lambda: 0.0)
    tracker.log_metrics({"eval/accuracy": 0.25, "eval/reward_mean": 0.1}, 0)
    for step in range(1, 11):
        tracker.log_metrics(
            {
                "reward/mean": step / 10,
                "reward/math/accuracy": step / 20,
                "response_length/mean": 100.0 + step,
                "kl/mean": 0.01 * step,
                "train/entropy": 1.0 - 0.05 * step,
                "policy/clip_fraction": 0.02,
                "train/grad_norm": 0.5,
                "train/lr": 1e-6,
                "time/step_s": 3.0,
            },
            step,
        )
    tracker.log_metrics({"eval/accuracy": 0.75, "eval/reward_mean": 0.6}, 10)
    tracker.log_samples([{"prompt": "1+1=?", "response": EVIL, "reward": 0.0}], 1)
    tracker.log_samples([{"prompt": "middle", "response": "not shown", "reward": 0.5}], 5)
    tracker.log_samples(
        [{"prompt": f"q{i}", "response": f"answer {i}", "reward": 1.0} for i in range(3)], 10
    )
    tracker.close()


def test_report_has_valid_pngs_escaped_samples_and_before_after(tmp_path: Path) -> None:
    _write_run(tmp_path / "run")
    report = render_report(tmp_path / "run", max_samples_per_step=2)
    assert report == tmp_path / "run" / "report" / "report.html"

    pngs = {p.name for p in report.parent.glob("*.png")}
    assert pngs == ALL_PLOTS
    for name in pngs:
        data = (report.parent / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and data.endswith(b"IEND\xaeB`\x82"), name

    page = _parse(report)
    assert sorted(page.images) == sorted(ALL_PLOTS)  # relative src, next to the page
    assert page.scripts == 0
    text = report.read_text(encoding="utf-8")
    assert "<script>" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; &lt;img" in text

    assert page.tables["eval"] == [
        ["metric", "before (step 0)", "after (step 10)", "change"],
        ["eval/accuracy", "0.25", "0.75", "+0.5"],
        ["eval/reward_mean", "0.1", "0.6", "+0.5"],
    ]
    samples = [rows for key, rows in page.tables.items() if key.startswith("samples")]
    assert samples[0] == [["prompt", "response", "reward"], ["1+1=?", EVIL, "0"]]
    # last step: only the last 2 of its 3 rows; the middle step is not shown
    assert samples[1] == [
        ["prompt", "response", "reward"],
        ["q1", "answer 1", "1"],
        ["q2", "answer 2", "1"],
    ]
    assert "not shown" not in text
    last = {row[0]: row[1:] for row in page.tables["last"][1:]}
    assert last["reward/mean"] == ["10", "1"] and last["eval/accuracy"] == ["10", "0.75"]


def test_absent_metrics_give_no_plot_and_stale_plots_are_removed(tmp_path: Path) -> None:
    _write_run(tmp_path)
    render_report(tmp_path)
    (tmp_path / "metrics.jsonl").unlink()
    tracker = JsonlTracker(tmp_path, clock=lambda: 0.0)
    tracker.log_metrics({"reward/mean": 0.5, "custom/thing": 2.0}, 1)
    tracker.close()
    report = render_report(tmp_path)
    assert {p.name for p in report.parent.glob("*.png")} == {"reward.png"}
    page = _parse(report)
    assert page.images == ["reward.png"] and "eval" not in page.tables


def test_crash_truncated_line_and_resumed_steps(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "time": 0, "reward/mean": 0.1}\n'
        '{"step": 2, "time": 0, "reward/mean": 0.2}\n'
        '{"step": 2, "time": 0, "reward/mean": 0.3, "kl/mean": "nan"}\n'  # resumed re-log
        '{"step": 3, "time": 0, "rew',  # the run died mid-line
        encoding="utf-8",
    )
    report = render_report(tmp_path, tmp_path / "out")
    last = {row[0]: row[1:] for row in _parse(report).tables["last"][1:]}
    assert last == {"reward/mean": ["2", "0.3"], "kl/mean": ["2", "nan"]}
    assert (tmp_path / "out" / "kl.png").read_bytes().startswith(PNG_MAGIC)


def test_a_broken_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl:2 is not valid JSON"):
        render_report(tmp_path)


def test_missing_metrics_names_the_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        render_report(tmp_path)


def test_missing_matplotlib_gives_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_run(tmp_path)

    def no_matplotlib(name: str) -> types.ModuleType:
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(plots_module.importlib, "import_module", no_matplotlib)
    with pytest.raises(ImportError, match=r"pip install 'lightrft\[report\]'"):
        render_report(tmp_path)


def test_health_signals_are_listed_and_marked(tmp_path: Path) -> None:
    tracker = JsonlTracker(tmp_path, clock=lambda: 0.0)
    fired = {4: 1.0, 5: 1.0, 6: 0.0, 7: 1.0}  # reward_drop: two episodes, from 4 and 7
    for step in range(1, 8):
        metrics = {"reward/mean": 1.0 / step, "health/alarm": float(fired.get(step, 0.0))}
        if step >= 3:
            metrics["health/reward_drop"] = 0.1 * step
            metrics["health/fired/reward_drop"] = fired.get(step, 0.0)
        if step == 2:
            metrics["health/fired/truncation"] = 1.0
            metrics["health/truncated_fraction"] = 0.95
        tracker.log_metrics(metrics, step)
    tracker.close()
    report = render_report(tmp_path)
    assert _parse(report).tables["health"] == [
        ["signal", "from step", "steps firing", "value then"],
        ["truncation", "2", "1", "0.95"],
        ["reward_drop", "4", "2", "0.4"],
        ["reward_drop", "7", "1", "0.7"],
    ]
    assert {"health.png", "reward.png"} <= {p.name for p in report.parent.glob("*.png")}


def test_a_run_without_health_signals_says_so(tmp_path: Path) -> None:
    tracker = JsonlTracker(tmp_path, clock=lambda: 0.0)
    tracker.log_metrics({"reward/mean": 0.5, "health/alarm": 0.0}, 1)
    tracker.close()
    text = render_report(tmp_path).read_text(encoding="utf-8")
    assert "No training-health signal fired." in text
