"""Views of a run folder for chairs: the self-contained report.html and a Markdown digest."""

from pipeline.report.html import (
    HtmlReportSink,
    render_html,
    stream_html_report,
    write_html_report,
)
from pipeline.report.markdown import markdown_of, render_markdown, write_markdown_report

__all__ = [
    "HtmlReportSink",
    "markdown_of",
    "render_html",
    "render_markdown",
    "stream_html_report",
    "write_html_report",
    "write_markdown_report",
]
