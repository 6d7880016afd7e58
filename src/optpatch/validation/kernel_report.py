"""The report of `optpatch validate`: its types, and reading one back from
the JSON that `--format json` printed, so that a run recorded on a GPU
machine can be printed or plotted again anywhere (`--from-report`).

kernels.py fills a report, kernel_chart.py draws one; both import it
from here.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path

EXIT_OK = 0
EXIT_CHECK_FAILED = 4


class ReportError(ValueError):
    """A saved report cannot be read; the message names the file and what to do."""


@dataclasses.dataclass(frozen=True)
class ComparisonRow:
    kernel: str
    shape: str
    measure: str
    original_us: float | None  # medians
    patched_us: float | None
    speedup: float | None
    correct: bool
    # The quartiles of each build's samples (None in reports from before spreads were recorded).
    original_q1: float | None = None
    original_q3: float | None = None
    patched_q1: float | None = None
    patched_q3: float | None = None
    code_changed: bool | None = None  # whether the rewrite changed host code this kernel runs (None: not known)

    @property
    def speedup_range(self) -> tuple[float, float] | None:
        """The speedup's spread: slowest original quartile over fastest patched one, and the reverse."""
        quartiles = (self.original_q1, self.original_q3, self.patched_q1, self.patched_q3)
        if any(value is None or value <= 0 for value in quartiles):
            return None
        return self.original_q1 / self.patched_q3, self.original_q3 / self.patched_q1


class Reading(enum.StrEnum):
    """What a row's ratio says, judged against its own spread and the run's noise; only the first two are differences."""

    FASTER = "faster"
    SLOWER = "slower"
    WITHIN_NOISE = "within noise"
    UNCHANGED = "code unchanged"  # the rewrite changed nothing this kernel runs: any ratio is noise
    NOT_JUDGED = "-"  # no spread recorded, or no ratio


def noise_bands(rows: list[ComparisonRow]) -> dict[str, tuple[float, float]]:
    """Per measure, the range of the ratios of the kernels whose code the rewrite left unchanged (1.0 always inside).

    Both builds run the same code for them, so however far their ratios
    stray from 1.0, that is this run's noise for the measure.
    """
    bands: dict[str, tuple[float, float]] = {}
    for row in rows:
        if row.code_changed is False and row.speedup is not None:
            low, high = bands.get(row.measure, (1.0, 1.0))
            bands[row.measure] = (min(low, row.speedup), max(high, row.speedup))
    return bands


def reading(row: ComparisonRow, bands: dict[str, tuple[float, float]]) -> Reading:
    """FASTER or SLOWER only when the row's spread excludes 1.0 and its ratio is outside the measure's noise band."""
    if row.speedup is None:
        return Reading.NOT_JUDGED
    if row.code_changed is False:
        return Reading.UNCHANGED
    spread = row.speedup_range
    if spread is None:
        return Reading.NOT_JUDGED
    low, high = bands.get(row.measure, (1.0, 1.0))
    if spread[0] <= 1.0 <= spread[1] or low <= row.speedup <= high:
        return Reading.WITHIN_NOISE
    return Reading.FASTER if row.speedup > 1.0 else Reading.SLOWER


@dataclasses.dataclass
class KernelReport:
    environment: dict = dataclasses.field(default_factory=dict)
    changed_files: list[str] = dataclasses.field(default_factory=list)
    rows: list[ComparisonRow] = dataclasses.field(default_factory=list)
    passed: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)
    targets: list[dict] = dataclasses.field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CHECK_FAILED if self.failures else EXIT_OK


def report_payload(report: KernelReport) -> dict:
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
_OPTIONAL_ROW_TYPES = {  # absent from reports saved before spreads were recorded
    "original_q1": (int, float, type(None)), "original_q3": (int, float, type(None)),
    "patched_q1": (int, float, type(None)), "patched_q3": (int, float, type(None)),
    "code_changed": (bool, type(None)),
}
_LIST_FIELDS = ("changed_files", "passed", "skipped", "failures", "targets")


def read_report(path: Path) -> KernelReport:
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
    report = KernelReport(rows=[_read_row(path, number, row) for number, row in enumerate(payload["rows"], 1)])
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
    for name, types in (_ROW_TYPES | _OPTIONAL_ROW_TYPES).items():
        value = row.get(name)
        # bool is an int in Python: a timing of `true` is as wrong as one of "12".
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            expected = " or ".join("null" if kind is type(None) else kind.__name__ for kind in types)
            raise ReportError(f"{path}: row {number}: `{name}` is {value!r}, not {expected}; {_WHAT_TO_GIVE}")
    return ComparisonRow(**{name: row.get(name) for name in _ROW_TYPES | _OPTIONAL_ROW_TYPES})
