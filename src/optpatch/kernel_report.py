"""The report of `optpatch validate`: its types, and reading one back from
the JSON that `--format json` printed, so that a run recorded on a GPU
machine can be printed or plotted again anywhere (`--from-report`).

kernel_check.py fills a report, kernel_chart.py draws one; both import it
from here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

EXIT_OK = 0
EXIT_VALIDATION_FAILED = 4


class ReportError(ValueError):
    """A saved report cannot be read; the message names the file and what to do."""


@dataclasses.dataclass(frozen=True)
class ComparisonRow:
    kernel: str
    shape: str
    measure: str
    original_us: float | None
    patched_us: float | None
    speedup: float | None
    correct: bool


@dataclasses.dataclass
class ValidationReport:
    environment: dict = dataclasses.field(default_factory=dict)
    changed_files: list[str] = dataclasses.field(default_factory=list)
    rows: list[ComparisonRow] = dataclasses.field(default_factory=list)
    passed: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)
    targets: list[dict] = dataclasses.field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_VALIDATION_FAILED if self.failures else EXIT_OK


def report_payload(report: ValidationReport) -> dict:
    """What `--format json` prints: the report's fields and its exit code."""
    payload = dataclasses.asdict(report)
    payload["exit_code"] = report.exit_code
    return payload


_WHAT_TO_GIVE = "give a file that `optpatch validate --format json` printed"
_ROW_TYPES = {
    "kernel": (str,), "shape": (str,), "measure": (str,),
    "original_us": (int, float, type(None)), "patched_us": (int, float, type(None)),
    "speedup": (int, float, type(None)), "correct": (bool,),
}
_LIST_FIELDS = ("changed_files", "passed", "skipped", "failures", "targets")


def read_report(path: Path) -> ValidationReport:
    """The report saved in `path`. Keys it does not know are ignored; the exit
    code is recomputed from the failures, as for a fresh run."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ReportError(f"{path}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text; {_WHAT_TO_GIVE}") from None
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}:{error.lineno}:{error.colno}: not JSON ({error.msg}); {_WHAT_TO_GIVE}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("rows"), list):
        raise ReportError(f"{path}: no list of `rows` at the top level; {_WHAT_TO_GIVE}")
    report = ValidationReport(rows=[_read_row(path, number, row) for number, row in enumerate(payload["rows"], 1)])
    environment = payload.get("environment", {})
    if not isinstance(environment, dict):
        raise ReportError(f"{path}: `environment` is not an object; {_WHAT_TO_GIVE}")
    report.environment = environment
    for name in _LIST_FIELDS:
        value = payload.get(name, [])
        if not isinstance(value, list):
            raise ReportError(f"{path}: `{name}` is not a list; {_WHAT_TO_GIVE}")
        setattr(report, name, value)
    return report


def _read_row(path: Path, number: int, row: object) -> ComparisonRow:
    if not isinstance(row, dict):
        raise ReportError(f"{path}: row {number} is not an object; {_WHAT_TO_GIVE}")
    for name, types in _ROW_TYPES.items():
        if name not in row:
            raise ReportError(f"{path}: row {number} has no `{name}`; {_WHAT_TO_GIVE}")
        # bool is an int in Python: a timing of `true` is as wrong as one of "12".
        if not isinstance(row[name], types) or (bool not in types and isinstance(row[name], bool)):
            expected = " or ".join("null" if kind is type(None) else kind.__name__ for kind in types)
            raise ReportError(f"{path}: row {number}: `{name}` is {row[name]!r}, not {expected}; {_WHAT_TO_GIVE}")
    return ComparisonRow(**{name: row[name] for name in _ROW_TYPES})
