"""Header modes on three small repositories built from tests/fixtures/cpp/headers: one with a
compile_commands.json, one whose include folders are inferred (its include/ folder, setup.py, the installed
torch and CUDA), and one with neither, where the parse with headers cannot find the project's header and the
header-free analysis stands.

Each source line with a site says what the parse with headers must find (`// with-headers: OPT201 safe`) and
what the header-free parse must do (`// without-headers: OPT201 keep`); `none` means no finding on the line.
Every rewrite, with the default policy and with every tier accepted, is compiled (g++, and nvcc for the `.cu`
against the CPU torch's headers) and, where it is host code, run before and after: same output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cpp_fixtures import GXX_FLAGS, STUBS
from optpatch.config import Settings
from optpatch.cpp_headers import HeaderMode, HeaderOutcome, HeaderSetup
from optpatch.passes import FileRecord, analyse_file, text_digest
from optpatch.policy import FixPolicy, fix_id
from optpatch.results import FileResult
from optpatch.rule import load_rules
from optpatch.source import read_source

SOURCES = Path(__file__).resolve().parents[1] / "fixtures" / "cpp" / "headers"
WITH = re.compile(r"//\s*with-headers:\s*(OPT\d+)\s+(\w+)")
WITHOUT = re.compile(r"//\s*without-headers:\s*(OPT\d+)\s+(\w+)")
RULES = [rule for rule in load_rules() if rule.code in ("OPT201", "OPT202")]
RUN_TABLES = "-DOPTPATCH_FIXTURE_RUN"  # tables.cpp's main(), against the stand-in


# -- the three repositories ---------------------------------------------------------------------------------


def compile_commands_repo(root: Path) -> Path:
    """src/ and include/, and build/compile_commands.json: vla_ops.cpp built by g++, tables.cpp by nvcc (as a
    CUDA extension's .cpp is), both against the torch stand-in."""
    _copy(root, {"include/fixture_sizes.h": "fixture_sizes.h", "src/vla_ops.cpp": "vla_ops.cpp", "src/tables.cpp": "tables.cpp"})
    flags = f"-std=c++17 -I{root / 'include'} -I{STUBS}"
    entries = [
        {"directory": str(root), "file": "src/vla_ops.cpp", "command": f"g++ {flags} -c src/vla_ops.cpp -o vla_ops.o"},
        {"directory": str(root), "file": "src/tables.cpp", "command": f"nvcc {flags} -c src/tables.cpp -o tables.o"},
    ]
    (root / "build").mkdir()
    (root / "build" / "compile_commands.json").write_text(json.dumps(entries))
    return root


def inferred_repo(root: Path) -> Path:
    """include/ and csrc/, with a setup.py naming the CUDA extension's sources and include folder."""
    _copy(root, {"include/fixture_sizes.h": "fixture_sizes.h", "csrc/vla_ops.cpp": "vla_ops.cpp", "csrc/tables.cu": "tables.cpp"})
    (root / "setup.py").write_text(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
        "setup(ext_modules=[CUDAExtension('tables', sources=['csrc/tables.cu'], include_dirs=['include'])])\n"
    )
    return root


def plain_repo(root: Path) -> Path:
    """The project header where nothing says to look (vendor/): a parse with headers cannot find it. The torch
    code is a .cu, which nvcc builds with CUDA's headers, as in the other two."""
    _copy(root, {"vendor/fixture_sizes.h": "fixture_sizes.h", "src/vla_ops.cpp": "vla_ops.cpp", "src/tables.cu": "tables.cpp"})
    return root


def _copy(root: Path, layout: dict[str, str]) -> None:
    for target, source in layout.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SOURCES / source, root / target)


# -- analysing -----------------------------------------------------------------------------------------------


_RECORDS: dict[tuple[Path, str, bool], FileRecord] = {}


def analyse(root: Path, rel: str, headers: bool, policy: FixPolicy = FixPolicy()) -> FileResult:
    """One file under `policy`; its analyses (and the safety net's verdicts) are made once per text, as the
    result cache would keep them: a parse with torch's headers is worth keeping."""
    source = read_source(root / rel, rel)
    record = _RECORDS.setdefault((root, rel, headers), FileRecord(text_digest(source.raw)))
    setup = HeaderSetup(root.resolve(), None, headers)
    result = analyse_file(source, RULES, Settings(), policy, record=record, headers=setup)
    assert result.error is None, result.error
    return result


def analyse_every_tier(root: Path, rel: str, headers: bool) -> FileResult:
    """With every fix accepted, as a passing validation run would (repeated while later passes find more)."""
    accepted: frozenset[str] = frozenset()
    while True:
        result = analyse(root, rel, headers, FixPolicy(unsafe_fixes=True, validated=accepted))
        more = accepted | {fix_id(f) for f in result.findings if f.fix is not None}
        if more == accepted:
            return result
        accepted = more


def expected(text: str, pattern: re.Pattern) -> tuple[set, set]:
    """(line, code, verdict) the line must have, and (line, code) that must have no finding."""
    verdicts, silent = set(), set()
    for number, line in enumerate(text.splitlines(), start=1):
        for code, verdict in pattern.findall(line):
            if verdict == "none":
                silent.add((number, code))
            else:
                verdicts.add((number, code, verdict))
    return verdicts, silent


def check_findings(result: FileResult, text: str, pattern: re.Pattern) -> None:
    found = {(f.line, f.code, f.fix.tier.value if f.fix is not None else f.verdict.value) for f in result.findings}
    verdicts, silent = expected(text, pattern)
    assert found == verdicts, f"unexpected: {sorted(found - verdicts)}; missing: {sorted(verdicts - found)}"
    assert not {(line, code) for line, code, _ in found} & silent


# -- compiling and running --------------------------------------------------------------------------------------


def run_program(text: bytes, name: str, workdir: Path, flags: list[str]) -> str:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    source = workdir / f"{name}.cpp"
    source.write_bytes(text)
    binary = workdir / name
    built = subprocess.run([gxx, *GXX_FLAGS, *flags, str(source), "-o", str(binary)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"{name} does not compile:\n{built.stderr[-3000:]}"
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, f"{name} failed:\n{ran.stdout}\n{ran.stderr}"
    assert ran.stdout, f"{name} printed nothing"
    return ran.stdout


def check_rewrites_run(root: Path, rel: str, headers: bool, workdir: Path, flags: list[str]) -> None:
    """The default rewrite and the every-tier rewrite both run and print what the original prints."""
    original = (root / rel).read_bytes()
    before = run_program(original, "before", workdir, flags)
    for label, result in (("default", analyse(root, rel, headers)), ("every_tier", analyse_every_tier(root, rel, headers))):
        if result.new is not None:
            assert run_program(result.new, f"after_{label}", workdir, flags) == before, f"{rel}: the {label} rewrite changed the output"


# -- the tests -----------------------------------------------------------------------------------------------------


def test_compile_commands_gives_each_file_its_own_flags(tmp_path):
    root = compile_commands_repo(tmp_path / "repo")
    for rel in ("src/vla_ops.cpp", "src/tables.cpp"):
        result = analyse(root, rel, headers=True)
        assert (result.headers.mode, result.headers.outcome) == (HeaderMode.COMPILE_COMMANDS, HeaderOutcome.USED), result.headers
        check_findings(result, (root / rel).read_text(), WITH)
    include = ["-I", str(root / "include")]
    check_rewrites_run(root, "src/vla_ops.cpp", True, tmp_path, include)
    check_rewrites_run(root, "src/tables.cpp", True, tmp_path, [*include, "-I", str(STUBS), RUN_TABLES])


@pytest.mark.parametrize("layout", [compile_commands_repo, inferred_repo, plain_repo], ids=lambda f: f.__name__)
def test_without_headers_every_header_dependent_site_is_kept(tmp_path, layout):
    root = layout(tmp_path / "repo")
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".cpp", ".cu")):
        rel = path.relative_to(root).as_posix()
        result = analyse(root, rel, headers=False)
        assert (result.headers.mode, result.headers.outcome) == (HeaderMode.NONE, HeaderOutcome.DISABLED)
        check_findings(result, path.read_text(), WITHOUT)
        include = ["-I", str(next(p for p in root.rglob("fixture_sizes.h")).parent)]
        tables = [] if "vla_ops" in rel else ["-I", str(STUBS), RUN_TABLES]
        check_rewrites_run(root, rel, False, tmp_path, include + tables)


def test_a_header_the_parse_cannot_find_leaves_the_header_free_analysis(tmp_path):
    root = plain_repo(tmp_path / "repo")
    for rel in ("src/vla_ops.cpp", "src/tables.cu"):
        result = analyse(root, rel, headers=True)
        assert result.headers.outcome is HeaderOutcome.FAILED, result.headers
        assert "fixture_sizes.h' not found" in result.headers.detail
        check_findings(result, (root / rel).read_text(), WITHOUT)


def test_inferred_includes_find_the_project_header_torch_and_cuda(tmp_path):
    """The installed torch's and CUDA's headers: skipped, saying which, where the machine lacks them."""
    from test_nvcc_example import NVCC_FLAGS, toolchain

    nvcc, include_dirs = toolchain()
    root = inferred_repo(tmp_path / "repo")
    result = analyse(root, "csrc/vla_ops.cpp", headers=True)
    assert (result.headers.mode, result.headers.outcome) == (HeaderMode.INFERRED, HeaderOutcome.USED), result.headers
    check_findings(result, (root / "csrc" / "vla_ops.cpp").read_text(), WITH)
    check_rewrites_run(root, "csrc/vla_ops.cpp", True, tmp_path, ["-I", str(root / "include")])

    tables = analyse(root, "csrc/tables.cu", headers=True)
    assert (tables.headers.mode, tables.headers.outcome) == (HeaderMode.INFERRED, HeaderOutcome.USED), tables.headers
    check_findings(tables, (root / "csrc" / "tables.cu").read_text(), WITH)
    rewritten = analyse_every_tier(root, "csrc/tables.cu", headers=True).new
    assert rewritten is not None
    target = tmp_path / "tables.cu"
    target.write_bytes(rewritten)
    includes = [f"-I{d}" for d in [root / "include", *include_dirs]]
    command = [str(nvcc), "-c", str(target), "-o", str(tmp_path / "tables.o"), *NVCC_FLAGS, *includes]
    compiled = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert compiled.returncode == 0, compiled.stderr[-4000:]
