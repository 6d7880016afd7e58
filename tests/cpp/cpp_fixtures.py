"""Annotated C++/CUDA fixtures, checked by analysis, by compiling and by running.

On the line of each site: `// expect: OPT201` (a safe fix; `// expect:
OPT202 validate` names another tier) or `// ok: OPT201 keep|advice` (the
rule reports the site without a fix), or a bare `// ok: OPT201` (the rule
must not report the line at all: constant arrays, suppressed sites).
`name.fixed.cpp` beside `name.cpp` is the exact text after the default
(safe) fixes.

Every fixture is a self-contained program. The harness compiles the
original and the rewrite (g++ for `.cpp`, with the torch stand-in in
`stubs/`; nvcc for `.cu`), runs both and requires identical, non-empty
output; it does the same for the rewrite with every tier accepted, and
checks that a second run on the rewrite changes nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.cpp_headers import HeaderSetup
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy, fix_id
from optpatch.results import FileResult
from optpatch.rule import load_rules
from optpatch.source import SourceFile, read_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cpp"
STUBS = FIXTURES / "stubs"
EXPECT = re.compile(r"//\s*expect:\s*(OPT\d+)(?:\s+(safe|validate|unsafe))?")
OK = re.compile(r"//\s*ok:\s*(OPT\d+)(?:\s+(keep|advice))?")
GXX_FLAGS = ("-std=c++17", "-Wvla", "-Wno-address")
NVCC_FLAGS = ("-std=c++17",)


_SOURCE_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh"})


def text_source(name: str, text: str) -> SourceFile:
    """A C++ source of TEXT, named NAME, read from nowhere."""
    return SourceFile(name, Path(name), text.encode(), text, "utf-8", False, "cpp")


def screened_findings(rule, name: str, text: str) -> list[tuple]:
    """What RULE alone reports on TEXT, every tier accepted: what a rule's screen must leave unchanged."""
    result = analyse_file(text_source(name, text), [rule], Settings(), FixPolicy(unsafe_fixes=True))
    assert result.error is None, result.error
    return [(f.line, f.col, f.verdict, f.fix, f.reason) for f in result.findings]


def unscreened_findings(rule, name: str, text: str, monkeypatch) -> list[tuple]:
    """`screened_findings` with RULE's `screen_text` accepting every text: what the screen is held to."""
    monkeypatch.setattr(rule, "screen_text", classmethod(lambda cls, text: True))
    return screened_findings(rule, name, text)


def screen_corpus(rule, word: str, cases: dict[str, str]) -> list[tuple[str, str]]:
    """What a rule's screen is held to the full check on: the corpus texts holding WORD, then CASES by name."""
    return [(name, text) for name, text in corpus(rule) if word in text] + sorted(cases.items())


def cases_without_findings(rule, cases: dict[str, str], skipped: tuple[str, ...]) -> list[str]:
    """The CASES outside SKIPPED that RULE reports nothing in: each must report something, or a screen test would
    pass with a screen that skips everything."""
    return [name for name, text in cases.items() if name not in skipped and not screened_findings(rule, name, text)]


def corpus(rule) -> list[tuple[str, str]]:
    """(name, text) of every C++/CUDA fixture, example and bundled kernel file, and `rule`'s VALID and INVALID code:
    what a test that holds two ways of judging a file to the same answer runs them on."""
    root = FIXTURES.parents[2]
    found = []
    for folder in ("tests/fixtures/cpp", "examples", "kernels"):
        found += [(p.name, p.read_text(encoding="utf-8")) for p in sorted((root / folder).rglob("*.c*"))
                  if p.suffix in _SOURCE_SUFFIXES]  # not kernels/__pycache__/*.cpython-311.pyc
    found += [(f"valid-{i}.cpp", text) for i, text in enumerate(rule.VALID)]
    return found + [(f"invalid-{i}.cpp", example.code) for i, example in enumerate(rule.INVALID)]


@dataclass(frozen=True)
class Expected:
    verdicts: frozenset[tuple[int, str, str]]  # (line, code, "safe"|"validate"|"keep"|...)
    silent: frozenset[tuple[int, str]]  # (line, code) that must have no finding


def fixture_paths() -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob("opt*/*") if p.suffix in (".cpp", ".cu") and ".fixed" not in p.suffixes
    )


def golden_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}.fixed{path.suffix}")


def expectations(text: str) -> Expected:
    verdicts, silent = set(), set()
    for number, line in enumerate(text.splitlines(), start=1):
        for code, tier in EXPECT.findall(line):
            verdicts.add((number, code, tier or "safe"))
        for code, verdict in OK.findall(line):
            if verdict:
                verdicts.add((number, code, verdict))
            else:
                silent.add((number, code))
    return Expected(frozenset(verdicts), frozenset(silent))


def observed(result: FileResult, codes: set[str]) -> set[tuple[int, str, str]]:
    return {
        (f.line, f.code, f.fix.tier.value if f.fix is not None else f.verdict.value) for f in result.findings if f.code in codes
    }


def analyse(source: SourceFile, codes: set[str], policy: FixPolicy = FixPolicy()) -> FileResult:
    """Header-free, as these fixtures are written for; the build files beside the fixture are read (OPT202
    asks whether a .cpp is compiled with CUDA's headers: opt202/setup.py says so)."""
    rules = [rule for rule in load_rules() if rule.code in codes]
    headers = HeaderSetup(Path(source.path).absolute().parent, enabled=False)
    return analyse_file(source, rules, Settings(), policy, headers=headers)


def analyse_every_tier(source: SourceFile, codes: set[str]) -> FileResult:
    """The result with every fix accepted, as a passing validation run (and --unsafe-fixes) would."""
    accepted: frozenset[str] = frozenset()
    while True:
        result = analyse(source, codes, FixPolicy(unsafe_fixes=True, validated=accepted))
        more = accepted | {fix_id(f) for f in result.findings if f.fix is not None}
        if more == accepted:
            return result
        accepted = more


def codes_of(text: str) -> set[str]:
    return set(re.findall(r"//\s*(?:expect|ok):\s*(OPT\d+)", text))


def compiler_for(path: Path) -> list[str]:
    if path.suffix == ".cu":
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            pytest.skip("nvcc is not installed: the .cu fixtures need it to compile")
        return [nvcc, *NVCC_FLAGS]
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed: the C++ fixtures need it to compile")
    return [gxx, *GXX_FLAGS]


@dataclass(frozen=True)
class Built:
    output: str  # what the program printed
    vla_warnings: int  # g++'s -Wvla warnings while compiling it


def build_and_run(path: Path, text: bytes, workdir: Path, name: str) -> Built:
    """Compile `text` as if it were `path` (its own folder and the stubs on the include path), run it."""
    source = workdir / f"{name}{path.suffix}"
    source.write_bytes(text)
    binary = workdir / name
    command = [*compiler_for(path), f"-I{path.parent}", f"-I{STUBS}", str(source), "-o", str(binary)]
    compiled = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert compiled.returncode == 0, f"{path.name} ({name}) does not compile:\n{compiled.stderr[-3000:]}"
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, f"{path.name} ({name}) failed:\n{ran.stdout}\n{ran.stderr}"
    return Built(ran.stdout, compiled.stderr.count("[-Wvla]"))


def check_fixture(path: Path, workdir: Path) -> None:
    source = read_source(path, path.name)
    codes = codes_of(source.text)
    expected = expectations(source.text)
    result = analyse(source, codes)
    assert result.error is None, result.error
    found = observed(result, codes)
    assert found == set(expected.verdicts), (
        f"unexpected: {sorted(found - expected.verdicts)}; missing: {sorted(expected.verdicts - found)}"
    )
    assert not {(line, code) for line, code, _ in found} & expected.silent

    rewritten = result.new if result.new is not None else source.raw
    golden = golden_path(path)
    if golden.exists():
        assert rewritten == golden.read_bytes(), f"the rewrite of {path.name} differs from {golden.name}"
    else:
        assert rewritten == source.raw, f"{path.name} changed but has no {golden.name}"

    before = build_and_run(path, source.raw, workdir, "before")
    after = build_and_run(path, rewritten, workdir, "after")
    assert before.output, f"{path.name} prints nothing: nothing to compare"
    assert after.output == before.output
    applied_vla_fixes = sum(1 for f, decision in result.decided if f.code == "OPT201" and decision.accepted)
    if path.suffix == ".cpp":
        assert before.vla_warnings - after.vla_warnings == applied_vla_fixes

    every_tier = analyse_every_tier(source, codes)
    if every_tier.new is not None and every_tier.new != rewritten:
        assert build_and_run(path, every_tier.new, workdir, "every_tier").output == before.output

    again = analyse(read_rewritten(source, rewritten), codes)
    assert again.new is None, f"a second run on the rewrite of {path.name} changed it again"


def read_rewritten(source: SourceFile, raw: bytes) -> SourceFile:
    text = raw.decode("utf-8-sig" if source.bom else "utf-8")
    return SourceFile(source.rel, source.path, raw, text, source.encoding, source.bom, source.language)
