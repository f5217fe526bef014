"""Run report: PNG plots and an HTML page from the JSONL files of a run directory."""

from lightrft.adapters.report.render import render_report

__all__ = ["render_report"]
