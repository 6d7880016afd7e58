"""Every rule's annotated fixtures, found by glob: adding a rule's fixtures needs no new test module.

A rule's fixtures live in `tests/fixtures/<language>/<code>/` (`python/opt103/`,
`cpp/opt202/`). Each fixture is checked as its language's harness says:
Python by tests/python/annotated.py (the `# expect:` annotations, the goldens
of each tier, and every `case_*` run before and after under poisoned memory,
with CUDA emulated on the CPU), C++/CUDA by tests/cpp/cpp_fixtures.py
(annotations, the golden, and the original and the rewrite compiled and run).
A fixture is analysed with every rule its annotations name, so a fixture of
two rules' sites checks that their fixes compose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from annotated import GOLDEN_SUFFIXES, check_fixture as check_python_fixture, codes_of as python_codes
from annotated import expectations as python_expectations
from cpp.cpp_fixtures import check_fixture as check_cpp_fixture, codes_of as cpp_codes
from cpp.cpp_fixtures import expectations as cpp_expectations
from cuda_on_cpu import CudaOnCpu
from optpatch.rule import load_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Beside the fixtures, folders that are not a rule's: the C++ torch stand-in and header trees.
NOT_A_RULE = {"stubs", "headers"}


def rule_folder(rule) -> Path:
    return FIXTURES / rule.language / rule.code.lower()


def fixture_paths(root: Path = FIXTURES) -> list[Path]:
    """Every fixture of every rule under ROOT, golden files aside."""
    found = []
    for folder in sorted(p for p in root.glob("*/opt*") if p.is_dir() and p.name not in NOT_A_RULE):
        if folder.parent.name == "python":
            found += [p for p in sorted(folder.glob("*.py")) if not p.name.endswith(GOLDEN_SUFFIXES)]
        else:
            found += [p for p in sorted(folder.glob("*")) if p.suffix in (".cpp", ".cu") and ".fixed" not in p.suffixes]
    return found


def codes_for(path: Path) -> tuple[str, ...]:
    """The rule of the fixture's folder, and every other rule its annotations name."""
    text = path.read_text(encoding="utf-8")
    named = python_codes(text) if path.suffix == ".py" else cpp_codes(text)
    return tuple(sorted(named | {path.parent.name.upper()}))


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_fixture(path, tmp_path):
    if path.suffix == ".py":
        check_python_fixture(path, codes_for(path), environment=CudaOnCpu)
    else:
        check_cpp_fixture(path, tmp_path)


def test_every_rule_has_fixtures():
    """A rule without a fixture folder would go untested: each rule's folder holds at least one fixture."""
    found = {path.parent for path in fixture_paths()}
    missing = [rule.code for rule in load_rules() if rule_folder(rule) not in found]
    assert not missing, f"no fixtures in tests/fixtures/<language>/<code>/ for {missing}"


def test_every_rule_has_fixes_and_keeps_in_its_fixtures():
    """Each rule's fixtures exercise both ways a site can go: rewritten, and kept."""
    for rule in load_rules():
        verdicts = set()
        for path in (p for p in fixture_paths() if p.parent == rule_folder(rule)):
            verdicts |= {verdict for code, verdict in annotated_verdicts(path) if code == rule.code}
        assert verdicts & {"fix", "safe", "validate"} and "keep" in verdicts, (rule.code, verdicts)


def annotated_verdicts(path: Path) -> set[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return {(code, verdict) for _, code, verdict in python_expectations(text)}
    return {(code, verdict) for _, code, verdict in cpp_expectations(text).verdicts}


def test_the_glob_finds_a_new_rules_fixture(tmp_path):
    """A fixture dropped into a new rule's folder is collected, and its folder's code is analysed."""
    folder = tmp_path / "python" / "opt999"
    folder.mkdir(parents=True)
    (folder / "site.py").write_text("x = 1  # expect: OPT101 none\n")
    (folder / "site.fixed.py").write_text("x = 1\n")
    (tmp_path / "cpp" / "opt998").mkdir(parents=True)
    (tmp_path / "cpp" / "opt998" / "a.cu").write_text("int main() { return 0; }\n")
    assert fixture_paths(tmp_path) == [tmp_path / "cpp" / "opt998" / "a.cu", folder / "site.py"]
    assert codes_for(folder / "site.py") == ("OPT101", "OPT999")
