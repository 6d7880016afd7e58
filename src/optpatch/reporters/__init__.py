"""Reporters: one module per output format, each a function of the run's result.

The registry below is the one list of formats: the command line takes its
choices from it. A reporter module is imported only when its format is
asked for, so choosing among them costs nothing at start-up.
"""

from __future__ import annotations

import importlib
from typing import Callable

# Machine formats return a string; "text" prints to a rich console itself (reporters/text.py).
# `github` and `markdown` are both the pull-request comment body, as CONTRACT.md has it;
# GitHub Actions' workflow annotations are `github-annotations`.
_MACHINE_FORMATS: dict[str, tuple[str, str]] = {
    "json": ("json_report", "render_json"),
    "sarif": ("sarif", "render_sarif"),
    "github": ("markdown", "render_markdown"),
    "markdown": ("markdown", "render_markdown"),
    "github-annotations": ("github", "render_github"),
}
FORMATS = ("text", *_MACHINE_FORMATS)


def machine_renderer(name: str) -> Callable:
    """The function that renders a run in the machine format NAME (anything but "text")."""
    module, function = _MACHINE_FORMATS[name]
    return getattr(importlib.import_module(f"optpatch.reporters.{module}"), function)
