"""Annotated Python fixtures: `# expect: OPT101 fix|validate|unsafe|keep|advice|none` on the line of each site.

A fixture file `name.py` holds sites and `case_*` functions that exercise
them; `name.fixed.py` beside it is the exact text after the safe fixes. The
harness checks the findings against the annotations, the rewrite against
the golden file, that no line annotated only keep, validate, unsafe, advice
or none changes in the safe rewrite, and then runs every `case_*` of the
original and of the rewritten module (module-level code included) with
uninitialised memory poisoned, in both modes of optpatch.poison, comparing
results exactly.

Two optional goldens cover the other tiers: `name.validate.py` is the text
after the safe and every validate fix (as if a validation run accepted them
all), compared by value like the safe one; `name.unsafe.py` is the text after
the safe and the unsafe fixes, compared by shape, dtype and device only
(unsafe fixes may change values, e.g. random numbers).

`none` marks code that must not be a site at all (`numpy.zeros`, a local
function named `zeros`): no finding of that rule on the line.

`; forced: fails` after the verdict marks a kept site whose rewrite would be
wrong, and whose cases show it: `forced_rewrite` turns that one site into
`empty` by hand, and the poisoned comparison must then fail. This is what
proves that the harness can fail and that each such fixture exercises the
use that blocks its proof.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

import torch

from cuda_on_cpu import device_of
from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy, fix_id
from optpatch.poison import MODES, poisoned
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

EXPECT = re.compile(r"#\s*expect:\s*((?:OPT\d+\s+\w+\s*,?\s*)+)(;\s*forced:\s*fails)?")
NO_FINDING = "none"
# The rewrites beside a fixture `name.py`: each tier's golden, and OPT103's `name.forced.py` (its races rewritten anyway).
GOLDEN_SUFFIXES = (".fixed.py", ".validate.py", ".unsafe.py", ".forced.py")
_ZEROS_TOKEN = re.compile(r"\b(zeros_like|new_zeros|zeros)\b")

Environment = Callable[[], ContextManager]


@dataclass(frozen=True)
class Site:
    line: int
    code: str
    verdict: str
    forced_fails: bool = False


def sites(text: str) -> list[Site]:
    """Every annotated site, in line order."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code, verdict in re.findall(r"(OPT\d+)\s+(\w+)", match.group(1)):
                found.append(Site(number, code, verdict, match.group(2) is not None))
    return found


def expectations(text: str) -> set[tuple[int, str, str]]:
    """{(line, code, verdict)} of the sites that must produce a finding."""
    return {(s.line, s.code, s.verdict) for s in sites(text) if s.verdict != NO_FINDING}


def codes_of(text: str) -> set[str]:
    """The rules a fixture's annotations name."""
    return {site.code for site in sites(text)}


def observed(findings, codes: set[str]) -> set[tuple[int, str, str]]:
    result = set()
    for finding in findings:
        if finding.code not in codes:
            continue
        verdict = finding.verdict.value
        if verdict == "fix":
            verdict = finding.fix.tier.value if finding.fix.tier.value != "safe" else "fix"
        result.add((finding.line, finding.code, verdict))
    return result


def analyse(path: Path, codes: tuple[str, ...], policy: FixPolicy = FixPolicy(), text: str | None = None):
    text = path.read_text(encoding="utf-8") if text is None else text
    source = SourceFile(path.name, path, text.encode(), text, "utf-8", False, "python")
    rules = select_rules(load_rules(), codes)
    return analyse_file(source, rules, Settings(), policy)


def load_module(code: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(code, f"<{name}>", "exec"), module.__dict__)
    return module


@dataclass(frozen=True)
class Raised:
    """A case that raised: compared by exception type and message, like a value."""

    error: str
    message: str


def run_cases(code: str, name: str, mode: str, environment: Environment = contextlib.nullcontext) -> dict[str, object]:
    """Load the module and run its `case_*` functions, all under poison (module-level code included)."""
    results = {}
    with poisoned(mode), environment():
        torch.manual_seed(1234)
        module = load_module(code, name)
        for case in sorted(vars(module)):
            if case.startswith("case_"):
                torch.manual_seed(1234)
                try:
                    results[case] = getattr(module, case)()
                except Exception as error:  # a rewrite that makes a case raise is a difference, not a crash
                    results[case] = Raised(type(error).__name__, str(error))
    return results


def assert_same(a, b, where: str, values: bool = True) -> None:
    """Equal tensors (dtype, device, shape and, when `values`, every element), recursively."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), where
        assert (a.dtype, device_of(a), a.shape) == (b.dtype, device_of(b), b.shape), where
        if not values:
            return
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{where}: {m}")
        assert not (a.is_floating_point() and torch.isnan(a).any()), f"{where}: the original itself produced NaN"
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), where
        for index, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{index}]", values)
    elif isinstance(a, dict):
        assert type(b) is dict and a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]", values)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_same_behaviour(
    original: str, rewritten: str, label: str, environment: Environment = contextlib.nullcontext, values: bool = True
) -> None:
    """Every `case_*` gives exactly the same result before and after, under each poison mode."""
    compile(rewritten, f"{label}.py", "exec")
    for mode in MODES:
        before = run_cases(original, f"{label}_before", mode, environment)
        after = run_cases(rewritten, f"{label}_after", mode, environment)
        assert before.keys() == after.keys()
        assert before, f"{label} has no case_* functions to execute"
        failing = {name: result for name, result in before.items() if isinstance(result, Raised)}
        assert not failing, f"{label}: cases of the original raise (catch expected errors inside the case): {failing}"
        for name in before:
            assert_same(before[name], after[name], f"{label}:{name} [{mode}]", values)


def forced_rewrite(text: str, line: int) -> str:
    """`text` with the allocation on `line` turned into `empty` by hand, as a wrong rule would."""
    lines = text.splitlines(keepends=True)
    replacement = {"zeros": "empty", "zeros_like": "empty_like", "new_zeros": "new_empty"}
    changed, count = _ZEROS_TOKEN.subn(lambda m: replacement[m.group(1)], lines[line - 1], count=1)
    assert count == 1, f"line {line} holds no zeros allocation to force"
    lines[line - 1] = changed
    return "".join(lines)


def changed_lines(original: str, rewritten: str) -> set[int]:
    """1-based numbers of the original lines that the rewrite replaced or deleted."""
    matcher = difflib.SequenceMatcher(a=original.splitlines(), b=rewritten.splitlines(), autojunk=False)
    return {i + 1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal" for i in range(i1, i2)}


def tier_policies(findings) -> list[tuple[str, FixPolicy, bool]]:
    """(golden suffix, policy, compare values?) for the validate and unsafe goldens."""
    accepted = frozenset(fix_id(f) for f in findings if f.fix is not None)
    return [("validate", FixPolicy(validated=accepted), True), ("unsafe", FixPolicy(unsafe_fixes=True), False)]


def check_fixture(path: Path, codes: tuple[str, ...], environment: Environment = contextlib.nullcontext) -> None:
    """Annotations, goldens of every tier present, kept lines untouched, and before/after execution of each.

    `environment` wraps every execution (e.g. `CudaOnCpu` for code that asks for CUDA devices).
    """
    text = path.read_text(encoding="utf-8")
    result = analyse(path, codes)
    assert result.error is None, result.error
    _assert_verdicts(path, text, result.findings, codes)
    rewritten = result.new.decode() if result.new is not None else text
    golden = path.with_suffix(".fixed.py")
    if golden.exists():
        assert rewritten == golden.read_text(encoding="utf-8")
    else:
        assert rewritten == text, f"{path.name} changed but has no {golden.name}"
    fixed_lines = {site.line for site in sites(text) if site.verdict == "fix"}
    touched = changed_lines(text, rewritten) - fixed_lines
    kept = {site.line: site.verdict for site in sites(text) if site.line in touched}
    assert not kept, f"{path.name}: lines changed although no site on them is a safe fix: {kept}"
    assert_same_behaviour(text, rewritten, f"{path.stem}.fixed", environment)
    for tier, policy, values in tier_policies(result.findings):
        tier_golden = path.with_suffix(f".{tier}.py")
        if not tier_golden.exists():
            continue
        tier_result = analyse(path, codes, policy)
        tier_text = tier_result.new.decode() if tier_result.new is not None else text
        assert tier_text == tier_golden.read_text(encoding="utf-8"), f"{tier_golden.name} differs"
        assert_same_behaviour(text, tier_text, f"{path.stem}.{tier}", environment, values=values)


def _assert_verdicts(path: Path, text: str, findings, codes: tuple[str, ...]) -> None:
    found, wanted = observed(findings, set(codes)), expectations(text)
    reasons = {(f.line, f.code): f.reason for f in findings}
    annotated = {(line, code) for line, code, _ in wanted}
    wrong = [
        f"L{line} {code}: expected {verdict}, {reasons.get((line, code), 'no finding')}"
        for line, code, verdict in sorted(wanted - found)
    ]
    unexpected = [f"L{line} {code}: unexpected {verdict}" for line, code, verdict in sorted(found - wanted) if (line, code) not in annotated]
    assert not wrong and not unexpected, f"{path.name}:\n" + "\n".join(wrong + unexpected)
    for site in sites(text):
        if site.verdict == NO_FINDING:
            assert (site.line, site.code) not in reasons, f"{path.name}:{site.line}: {site.code} must not be a site here"
