"""The differential oracle: a program and optpatch's rewrite of it must compute exactly the same thing.

optpatch runs through the engine (`analyse_file`, the default fix policy:
safe fixes only). When it rewrites the program, both versions run with
uninitialised memory poisoned, in each mode of `optpatch.poison`, on every
input of `INPUTS` (branches taken and not, loops run zero, one and two
times); their return values, yielded values, raised exceptions and
everything they put in `sink` must be identical, NaN for NaN. The helpers
a program calls (`fail_if`, `record`, `INDEX`) come from `programs.HELPERS`. A difference
raises `DifferentialFailure` with the program, the rewrite and the first
difference, which hypothesis then shrinks to a minimal program.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from pathlib import Path

import torch

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.poison import MODES, poisoned
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

from fuzz.programs import HELPERS

INPUTS = tuple((flag, n) for flag in (False, True) for n in (0, 1, 2))
SEED = 1234


class DifferentialFailure(AssertionError):
    """The rewrite changed a result, or optpatch failed on the program."""


@dataclass(frozen=True)
class Checked:
    """What one program exercised: its sites, and how many fixes were applied and proven by execution."""

    sites: int
    applied: int
    kept: int


@dataclass(frozen=True)
class Outcome:
    returned: object
    yielded: list
    raised: tuple[str, str] | None
    sink: list


def rewrite(source: str, codes: tuple[str, ...]):
    """optpatch's analysis of `source` as one file: (rewritten text, its findings with their decisions)."""
    file = SourceFile("program.py", Path("program.py"), source.encode(), source, "utf-8", False, "python")
    result = analyse_file(file, select_rules(load_rules(), codes), Settings(), FixPolicy())
    if result.error is not None:
        raise DifferentialFailure(f"optpatch failed on the program: {result.error}\n{_numbered(source)}")
    rewritten = result.new.decode() if result.new is not None else source
    return rewritten, [d for d in result.decided if d.finding.code in codes]


def check_program(source: str, codes: tuple[str, ...]) -> Checked:
    """Rewrite `source` with the rules `codes` and compare both versions under poison on every input."""
    rewritten, findings = rewrite(source, codes)
    applied = sum(decision.accepted for _, decision in findings)
    checked = Checked(len(findings), applied, sum(1 for f, _ in findings if f.verdict.value == "keep"))
    if rewritten == source:
        return checked
    try:
        compile(rewritten, "rewritten.py", "exec")
    except SyntaxError as error:
        raise DifferentialFailure(f"the rewrite does not compile: {error}\n{_report(source, rewritten, findings)}") from None
    assert_same_results(source, rewritten, findings)
    return checked


def assert_same_results(source: str, rewritten: str, findings=()) -> None:
    before, after = _load(source), _load(rewritten)
    for mode in MODES:
        for flag, n in INPUTS:
            expected = _run(before, mode, flag, n)
            actual = _run(after, mode, flag, n)
            difference = first_difference(expected, actual)
            if difference is not None:
                raise DifferentialFailure(
                    f"the rewrite changed a result (poison mode {mode!r}, flag={flag}, n={n}): {difference}\n"
                    + _report(source, rewritten, findings)
                )


def _load(source: str):
    namespace: dict[str, object] = {"__name__": "fuzzed_program"}
    exec(compile(HELPERS, "helpers.py", "exec"), namespace)
    exec(compile(source, "program.py", "exec"), namespace)
    return namespace["program"]


def _run(program, mode: str, flag: bool, n: int) -> Outcome:
    with poisoned(mode):
        torch.manual_seed(SEED)
        inputs = torch.Generator().manual_seed(SEED)
        src = torch.randn(4, 3, generator=inputs)
        isrc = torch.randint(0, 10, (4, 3), generator=inputs)
        sink: list = []
        returned, yielded, raised = None, [], None
        try:
            result = program(src, isrc, flag, n, sink)
            returned = _drain(result, yielded) if inspect.isgenerator(result) else result
        except Exception as error:  # an exception is a result like any other, compared by type and message
            raised = (type(error).__name__, str(error))
        return Outcome(returned, yielded, raised, sink)


def _drain(generator, yielded: list):
    while True:
        try:
            yielded.append(next(generator))
        except StopIteration as stop:
            return stop.value


def first_difference(a, b, where: str = "result") -> str | None:
    """None when `a` and `b` are exactly equal (NaN equals NaN), else where and how they differ."""
    if isinstance(a, Outcome) and isinstance(b, Outcome):
        for part in ("raised", "returned", "yielded", "sink"):
            difference = first_difference(getattr(a, part), getattr(b, part), part)
            if difference:
                return difference
        return None
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{where}: {a!r} != {b!r}"
        if (a.dtype, a.shape) != (b.dtype, b.shape):
            return f"{where}: {a.dtype}{tuple(a.shape)} != {b.dtype}{tuple(b.shape)}"
        equal = a == b
        if a.is_floating_point():
            equal |= a.isnan() & b.isnan()
        return None if bool(equal.all()) else f"{where}: {a.tolist()} != {b.tolist()}"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{where}: {a!r} != {b!r}"
        for index, (x, y) in enumerate(zip(a, b)):
            difference = first_difference(x, y, f"{where}[{index}]")
            if difference:
                return difference
        return None
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def _report(source: str, rewritten: str, findings) -> str:
    diff = "".join(difflib.unified_diff(source.splitlines(True), rewritten.splitlines(True), "program.py", "rewritten.py"))
    verdicts = "\n".join(f"  L{f.line} {f.verdict.value}{' (applied)' if decision.accepted else ''}: {f.reason}"
                         for f, decision in findings)
    return f"--- program ---\n{_numbered(source)}\n--- rewrite ---\n{diff}--- findings ---\n{verdicts}\n"


def _numbered(source: str) -> str:
    return "\n".join(f"{number:3} {line}" for number, line in enumerate(source.splitlines(), start=1))
