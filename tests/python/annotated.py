"""Annotated Python fixtures: `# expect: OPT101 fix|validate|unsafe|keep|advice` on the line of each site.

A fixture file `name.py` holds sites and `case_*` functions that exercise
them; `name.fixed.py` beside it is the exact text after the safe fixes. The
harness checks the findings against the annotations, the rewrite against
the golden file, and then runs every `case_*` of the original and of the
rewritten module with uninitialised memory poisoned, comparing results
exactly.

Two optional goldens cover the other tiers: `name.validate.py` is the text
after the safe and every validate fix (as if a validation run accepted them
all), compared by value like the safe one; `name.unsafe.py` is the text after
the safe and the unsafe fixes, compared by shape, dtype and device only
(unsafe fixes may change values, e.g. random numbers).
"""

from __future__ import annotations

import contextlib
import re
import types
from pathlib import Path
from typing import Callable, ContextManager

import torch

from cuda_on_cpu import device_of
from optpatch.config import Settings
from optpatch.engine import FixPolicy, analyse_file, fix_id
from optpatch.poison import MODES, poisoned
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

EXPECT = re.compile(r"#\s*expect:\s*((?:OPT\d+\s+\w+\s*,?\s*)+)")


def expectations(text: str) -> set[tuple[int, str, str]]:
    """{(line, code, verdict)} from `# expect: OPT101 fix, OPT102 keep` comments."""
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code, verdict in re.findall(r"(OPT\d+)\s+(\w+)", match.group(1)):
                found.add((number, code, verdict))
    return found


def observed(findings, codes: set[str]) -> set[tuple[int, str, str]]:
    result = set()
    for finding in findings:
        if finding.code not in codes:
            continue
        verdict = finding.verdict.value
        if verdict == "fix":
            verdict = finding.tier.value if finding.tier.value != "safe" else "fix"
        result.add((finding.line, finding.code, verdict))
    return result


def analyse(path: Path, codes: tuple[str, ...], policy: FixPolicy = FixPolicy()):
    text = path.read_text(encoding="utf-8")
    source = SourceFile(path.name, path, text.encode(), text, "utf-8", False, "python")
    rules = select_rules(load_rules(), codes)
    return analyse_file(source, rules, Settings(), policy)


def load_module(code: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(code, f"<{name}>", "exec"), module.__dict__)
    return module


def run_cases(
    module: types.ModuleType, mode: str, environment: Callable[[], ContextManager] = contextlib.nullcontext
) -> dict[str, object]:
    results = {}
    with poisoned(mode), environment():
        for name in sorted(vars(module)):
            if name.startswith("case_"):
                torch.manual_seed(1234)
                results[name] = getattr(module, name)()
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
    else:
        assert a == b, where


def check_fixture(
    path: Path, codes: tuple[str, ...], environment: Callable[[], ContextManager] = contextlib.nullcontext
) -> None:
    """Annotations, goldens of every tier present, and before/after execution of each.

    `environment` wraps every execution (e.g. `CudaOnCpu` for code that asks for CUDA devices).
    """
    text = path.read_text(encoding="utf-8")
    result = analyse(path, codes)
    assert result.error is None, result.error
    assert observed(result.findings, set(codes)) == expectations(text)
    rewritten = result.new.decode() if result.new is not None else text
    golden = path.with_suffix(".fixed.py")
    if golden.exists():
        assert rewritten == golden.read_text(encoding="utf-8")
    else:
        assert rewritten == text, f"{path.name} changed but has no {golden.name}"
    compare_execution(path, text, rewritten, "fixed", environment)
    for tier, policy, values in tier_policies(result.findings):
        tier_golden = path.with_suffix(f".{tier}.py")
        if not tier_golden.exists():
            continue
        tier_result = analyse(path, codes, policy)
        tier_text = tier_result.new.decode() if tier_result.new is not None else text
        assert tier_text == tier_golden.read_text(encoding="utf-8"), f"{tier_golden.name} differs"
        compare_execution(path, text, tier_text, tier, environment, values=values)


def tier_policies(findings) -> list[tuple[str, FixPolicy, bool]]:
    """(golden suffix, policy, compare values?) for the validate and unsafe goldens."""
    accepted = frozenset(fix_id(f) for f in findings if f.fixable)
    return [("validate", FixPolicy(validated=accepted), True), ("unsafe", FixPolicy(unsafe_fixes=True), False)]


def compare_execution(path: Path, text: str, rewritten: str, label: str, environment, values: bool = True) -> None:
    compile(rewritten, f"{path.stem}.{label}.py", "exec")
    for mode in MODES:
        before = run_cases(load_module(text, f"{path.stem}_before"), mode, environment)
        after = run_cases(load_module(rewritten, f"{path.stem}_{label}"), mode, environment)
        assert before.keys() == after.keys()
        assert before, f"{path.name} has no case_* functions to execute"
        for name in before:
            assert_same(before[name], after[name], f"{path.name}:{name} [{label}, {mode}]", values)
