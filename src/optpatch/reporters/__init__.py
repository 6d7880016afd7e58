"""Reporters: one module per output format, each a function of the run's result."""

from __future__ import annotations

from typing import Callable

from optpatch.reporters.github import render_github
from optpatch.reporters.json_report import render_json
from optpatch.reporters.markdown import render_markdown
from optpatch.reporters.sarif import render_sarif

# Machine formats return a string; "text" prints to a rich console itself.
# `github` and `markdown` are both the pull-request comment body, as CONTRACT.md has it;
# GitHub Actions' workflow annotations are `github-annotations`.
MACHINE_FORMATS: dict[str, Callable] = {
    "json": render_json,
    "sarif": render_sarif,
    "github": render_markdown,
    "markdown": render_markdown,
    "github-annotations": render_github,
}
FORMATS = ("text", *MACHINE_FORMATS)
