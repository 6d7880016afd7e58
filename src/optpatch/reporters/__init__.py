"""Reporters: one module per output format, each a function of the run's result.

The registry below is the one list of formats: the command line takes its
`--output-format` choices from it, aliases included. A reporter module is
imported only when its format is asked for, so choosing among them costs
nothing at start-up.

The names follow ruff's where ruff has the format (`full`, `concise`,
`json`, `sarif`, `github` for GitHub Actions workflow annotations);
`markdown` is optpatch's own, the pull-request comment body.
"""

from __future__ import annotations

import enum
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from optpatch.model import CodeArea
from optpatch.reporters.status import NOTHING_WRITTEN, Delivery

if TYPE_CHECKING:
    from optpatch.validation.tests import ValidationOutcome


@dataclass(frozen=True)
class ReportOptions:
    """What one command asks of its report, the same for every format."""

    delivery: Delivery = NOTHING_WRITTEN  # what the command wrote: "fixed", "in patch" or "fixable"
    verbose: bool = False  # kept sites too (text, SARIF)
    show_fixes: bool = False  # each fix's diff under its finding (full)
    width: int = 80  # text formats wrap to this many columns
    patch_path: str | None = None  # the patch file written, for the JSON report
    validation: ValidationOutcome | None = None  # what --validate CMD ran, backed out and accepted
    original_text: Callable[[str], str | None] = lambda rel: None  # a file's text before this run, for --show-fixes
    fix_areas: tuple[CodeArea, ...] = (CodeArea.LIBRARY,)  # the areas whose fixes the run applies (`fix-areas`)
    display: Callable[[str], str] = lambda rel: rel  # a path as the text formats print it (relative to the current folder)
    show: frozenset[str] = frozenset()  # --show: which of fixes, proposals, advice, kept the text formats list; empty: the default


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`1 file`, `2 files`: the noun agrees with the number."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


class FormatKind(enum.Enum):
    TEXT = "text"  # lines for people, wrapped to a width, coloured on a terminal (reporters/text.py)
    MACHINE = "machine"  # one string for a program to read


class StatisticsForm(enum.Enum):
    """How a format prints `--statistics` (the counts of reporters/text.py `statistics`)."""

    TABLE = "table"  # aligned lines for people
    JSON = "json"  # one JSON object for a program


class ValidationPlacement(enum.Enum):
    """Where the outcome of `--validate CMD` goes beside a format's report."""

    REPORT = "report"  # into the report's own stream, as the console section (validation/render.py)
    DOCUMENT = "document"  # inside the document, as its own fields (the renderer reads ReportOptions.validation)
    STDERR = "stderr"  # on stderr, as the console section: the document has no place for it


@dataclass(frozen=True)
class OutputFormat:
    """A format and what it can do: the command line reads these capabilities, never the format's name."""

    name: str
    kind: FormatKind
    module: str
    function: str
    help: str
    statistics: StatisticsForm | None = None  # None: --statistics is refused with this format
    validation: ValidationPlacement = ValidationPlacement.STDERR
    # After --validate's baseline failed there are no findings: the renderer is still called, with no result,
    # for a document holding the validation alone. Else nothing is written but the validation's own section.
    renders_without_result: bool = False

    def renderer(self) -> Callable:
        return getattr(importlib.import_module(f"optpatch.reporters.{self.module}"), self.function)


FORMATS: dict[str, OutputFormat] = {
    format.name: format
    for format in (
        OutputFormat("full", FormatKind.TEXT, "text", "render_full", "a block per finding: location, rule, status, proof",
                     statistics=StatisticsForm.TABLE, validation=ValidationPlacement.REPORT),
        OutputFormat("concise", FormatKind.TEXT, "text", "render_concise", "one line per finding",
                     statistics=StatisticsForm.TABLE, validation=ValidationPlacement.REPORT),
        OutputFormat("json", FormatKind.MACHINE, "json_report", "render_json", "the JSON report (docs/json-schema.md)",
                     statistics=StatisticsForm.JSON, validation=ValidationPlacement.DOCUMENT, renders_without_result=True),
        OutputFormat("sarif", FormatKind.MACHINE, "sarif", "render_sarif", "SARIF 2.1.0, for code scanning"),
        OutputFormat("github", FormatKind.MACHINE, "github", "render_github", "GitHub Actions workflow annotations"),
        OutputFormat("markdown", FormatKind.MACHINE, "markdown", "render_markdown", "a pull-request comment body",
                     validation=ValidationPlacement.DOCUMENT),
    )
}
# Other names a format is accepted by. `text` was the name of `full`; `github-annotations` that of `github`,
# before `github` took ruff's meaning: it is deprecated, and goes in the release after the one that says so.
ALIASES: dict[str, str] = {"text": "full", "github-annotations": "github"}
DEPRECATED: frozenset[str] = frozenset({"github-annotations"})
CHOICES: tuple[str, ...] = (*FORMATS, *ALIASES)


def output_format(name: str) -> OutputFormat:
    """The format NAME stands for, alias or not."""
    return FORMATS[ALIASES.get(name, name)]


def deprecation_note(name: str) -> str | None:
    """One line for stderr when NAME is a deprecated alias, else None."""
    if name not in DEPRECATED:
        return None
    return f"warning: --output-format {name} is deprecated and will be removed in the next release; use {ALIASES[name]}"
