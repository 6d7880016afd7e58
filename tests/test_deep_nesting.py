"""Deeply nested code is analysed or refused with a reason; it never kills the process.

libcst's parser and libclang recurse on the C stack once per level of
nesting: before optpatch gave them a large stack, each file below ended the
whole run with SIGSEGV (exit status 139, no report, no patch). They run in a
subprocess here so that a regression fails the test instead of pytest.
"""

from __future__ import annotations

import re

import subprocess
import sys
from pathlib import Path

FIXABLE = "import torch\ndef f(y):\n    x = torch.zeros(3)\n    x.copy_(y)\n    return x\n"


def else_if_chain(branches: int) -> str:
    """Generated dispatch code: clang nests each `else if` one level deeper."""
    arms = "".join(f"  else if (n == {i}) buf[0] = {i};\n" for i in range(1, branches))
    return "void dispatch(int n) {\n  float buf[n];\n  if (n == 0) buf[0] = 0;\n" + arms + "}\n"


def apply(repo: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "optpatch", "apply", str(repo), "-o", str(repo.parent / "p.diff"), "-j", "1"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_deep_python_and_cpp_files_are_analysed_or_refused_without_killing_the_run(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "chain.py").write_text(FIXABLE + "ok = " + " and ".join(["y"] * 10_000) + "\n")
    (repo / "parens.py").write_text(FIXABLE + "z = " + "(" * 2_000 + "1" + ")" * 2_000 + "\n")
    (repo / "dispatch.cpp").write_text(else_if_chain(10_000))
    (repo / "ok.py").write_text(FIXABLE)
    result = apply(repo)
    assert result.returncode == 3, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stdout + result.stderr
    assert re.search(r"^parens.py:6:\d+: error: syntax error: too many nested parentheses", result.stdout, re.M)
    chain_error = next(line for line in result.stdout.splitlines() if line.startswith("chain.py"))
    assert "nest" in chain_error  # libcst parses it; the analysis of a tree 10,000 deep gives up, and says so
    patch = (tmp_path / "p.diff").read_text()
    assert "+++ b/ok.py" in patch
    assert "+++ b/dispatch.cpp" in patch  # its VLA becomes a std::vector


COUNT_PARENS = """
import sys
from pathlib import Path
from clang.cindex import CursorKind
from optpatch.cpp_frontend import CppUnit
from optpatch.source import read_source
unit = CppUnit(read_source(Path(sys.argv[1]), "deep.cpp"))
parens = [node for node in unit.nodes if node.kind is CursorKind.PAREN_EXPR]
innermost = max(parens, key=lambda node: len(list(node.ancestors())))
print(len(parens), unit.node_text(innermost))
"""


def test_the_cpp_tree_keeps_every_level_of_a_deep_expression(tmp_path):
    depth = 1_500  # past Python's recursion limit (one frame a level) and past what clang's 8 MiB thread survives
    path = tmp_path / "deep.cpp"
    path.write_text("int deep() {\n  return " + "(" * depth + "1" + ")" * depth + ";\n}\n")
    result = subprocess.run([sys.executable, "-c", COUNT_PARENS, str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.split() == [str(depth), "(1)"]
    assert "Exception ignored" not in result.stderr
