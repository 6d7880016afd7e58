"""Reporters: one module per output format, each a function of the run's result."""

from __future__ import annotations

from typing import Callable

from optpatch.reporters.json_report import render_json
from optpatch.reporters.text import render_text

# Machine formats return a string; "text" prints to a rich console itself.
MACHINE_FORMATS: dict[str, Callable] = {"json": render_json}
FORMATS = ("text", *MACHINE_FORMATS)
