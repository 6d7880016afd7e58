"""libcst parses an outline of the file when every rule says what it needs (python_outline.py).

The outline must change no finding: every Python rule is run over every
Python fixture, example and rule example, and over modules written so that
a rule's site depends on another function, with and without the outline.
Each of a rule's `needs` is dropped in turn to show that the test notices.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from optpatch import engine
from optpatch.config import Settings
from optpatch.engine import FixPolicy, analyse_file
from optpatch.python_frontend import PythonModule
from optpatch.python_outline import outline
from optpatch.python_screen import CallIndex
from optpatch.rule import load_rules
from optpatch.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]
PYTHON_RULES = [rule for rule in load_rules() if rule.language == "python"]
RULE = {rule.code: rule for rule in PYTHON_RULES}

# Modules where a site's verdict depends on a function other than its own: the outline must keep that function.
ELSEWHERE = {
    "writer in another method": (
        "OPT101", lambda node: isinstance(node, ast.Call) and node.func.attr == "copy_",
        "import torch\n\nclass Cache:\n    def __init__(self, n):\n        self.lengths = torch.zeros(n, device='cuda')\n\n"
        "    def unrelated(self):\n        return 1\n\n    def fill(self, values):\n        self.lengths[: values.shape[0]].copy_(values)\n",
    ),
    "the module's own new_zeros": (
        "OPT101", lambda node: isinstance(node, ast.FunctionDef),
        "import torch\n\ndef grow(t, y):\n    x = t.new_zeros(y.shape)\n    x.copy_(y)\n    return x\n\n"
        "class Pool:\n    def new_zeros(self, shape):\n        return [0] * shape[0]\n",
    ),
    "a second `from torch import zeros`": (
        "OPT101", lambda node: isinstance(node, ast.ImportFrom),
        "from torch import zeros\n\ndef f(n, y):\n    x = zeros(n)\n    x.copy_(y)\n    return x\n\n"
        "def g():\n    from torch import zeros\n    return zeros\n",
    ),
    "an aliased zeros": (
        "OPT101", lambda node: isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "z",
        "from torch import zeros as z\n\ndef other():\n    return 2\n\ndef f(n, y):\n    x = z(n)\n    x.copy_(y)\n    return x\n",
    ),
    "a device rebound by a `global`": (
        "outer", lambda node: isinstance(node, ast.Global),
        "import torch\n\nDEVICE = torch.device('cuda')\n\ndef f(n):\n    return torch.arange(n).to(DEVICE)\n\n"
        "def use_cpu():\n    global DEVICE\n    DEVICE = 'cpu'\n",
    ),
    "a device rebound by `:=` in a decorator": (
        "outer", lambda node: isinstance(node, ast.NamedExpr),
        "import torch\n\nDEVICE = torch.device('cuda')\n\ndef f(n):\n    return torch.arange(n).to(DEVICE)\n\n"
        "@register(DEVICE := 'cpu')\ndef g():\n    return 1\n",
    ),
    "a move in a method of a big class": (
        "OPT102", lambda node: True,
        "import torch\n\nclass Runner:\n    def setup(self):\n        self.x = 1\n\n"
        "    def step(self, n):\n        return torch.arange(n).cuda()\n\n    def teardown(self):\n        del self.x\n",
    ),
}


def _texts() -> list[tuple[str, str]]:
    paths = sorted((ROOT / "tests/fixtures/python").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]
    for rule in PYTHON_RULES:
        found += [(f"{rule.code}-valid-{i}.py", text) for i, text in enumerate(rule.VALID)]
        found += [(f"{rule.code}-invalid-{i}.py", example.code) for i, example in enumerate(rule.INVALID)]
    return found + [(f"elsewhere-{i}.py", text) for i, (_, _, text) in enumerate(ELSEWHERE.values())]


TEXTS = _texts()


def _source(name: str, text: str) -> SourceFile:
    return SourceFile(name, Path(name), text.encode(), text, "utf-8", False, "python")


def _findings(rules, name: str, text: str) -> list[tuple]:
    result = analyse_file(_source(name, text), rules, Settings(), FixPolicy(unsafe_fixes=True))
    error = result.error.reason if result.error else None
    return [(f.code, f.line, f.col, f.verdict, f.tier, f.reason, f.edits) for f in result.findings] + [error, result.new]


def _whole_module(monkeypatch) -> None:
    monkeypatch.setattr(engine, "_outline", lambda rules, calls, source: None)


def test_the_outline_changes_no_finding(monkeypatch):
    outlined = {name: _findings(PYTHON_RULES, name, text) for name, text in TEXTS}
    _whole_module(monkeypatch)
    whole = {name: _findings(PYTHON_RULES, name, text) for name, text in TEXTS}
    assert outlined == whole
    assert sum(1 for findings in whole.values() if len(findings) > 2) > 50, "too few findings to compare"


@pytest.mark.parametrize("rule", PYTHON_RULES, ids=lambda rule: rule.code)
def test_each_rule_alone_sees_the_same_findings(rule, monkeypatch):
    outlined = {name: _findings([rule], name, text) for name, text in TEXTS if rule.wants(_source(name, text))}
    _whole_module(monkeypatch)
    assert outlined == {name: _findings([rule], name, text) for name, text in TEXTS if name in outlined}


def test_the_corpus_is_really_outlined():
    """Else the tests above compare the whole module with itself."""
    stubbed = 0
    for name, text in TEXTS:
        source = _source(name, text)
        wanted, calls = engine._screened([rule for rule in PYTHON_RULES if rule.wants(source)], source)
        if wanted and engine._outline(wanted, calls, source) is not None:
            stubbed += 1
    assert stubbed >= len(ELSEWHERE) + 5


@pytest.mark.parametrize("case", list(ELSEWHERE), ids=lambda case: re.sub(r"\W+", "-", case))
def test_each_need_is_needed(case, monkeypatch):
    """Without the nodes the case is about, the outline stubs what the verdict depends on, and it changes."""
    owner, dropped, text = ELSEWHERE[case]
    expected = _findings(PYTHON_RULES, "m.py", text)
    if owner == "outer":
        index = CallIndex.of

        def without_outer_bindings(source_text):
            calls = index(source_text)
            calls.outer_bindings = [node for node in calls.outer_bindings if not dropped(node)]
            return calls

        monkeypatch.setattr(CallIndex, "of", staticmethod(without_outer_bindings))
    else:
        rule = RULE[owner]
        needs = rule.needs.__func__
        monkeypatch.setattr(rule, "needs", classmethod(lambda cls, calls: [n for n in needs(cls, calls) if not dropped(n)]))
    assert _findings(PYTHON_RULES, "m.py", text) != expected


# -- the outline itself ----------------------------------------------------------------------------

EDGES = {
    "decorators shorter than the stub": "import torch\n@a\n@b\ndef long_function_name(x, y=2):\n    return x + y\ndef f(n):\n    return torch.zeros(n)\n",
    "a signature over several lines": "def function_with_a_name(\n    a,\n    b,\n):\n    return (a,\n  b)\ndef f(n):\n    return torch.zeros(n)\n",
    "tabs": "class Model:\n\tdef forward(self, x):\n\t\ty = x * 2\n\t\treturn y\n\n\tdef other(self):\n\t\treturn torch.zeros(3)\n",
    "CRLF": "import torch\r\ndef helper(a):\r\n    return a * 2\r\n\r\ndef f(n):\r\n    return torch.zeros(n)\r\n",
    "lone CR": "import torch\rdef helper(a):\r    return a * 2\r\rdef f(n):\r    return torch.zeros(n)\r",
    "non-ASCII before and inside": "import torch\ns = 'é中'\ndef helper(a):\n    return 'ü' * a\n\ndef f(n):\n    return torch.zeros(n)  # ß\n",
    "async, nested classes": "class A:\n    class B:\n        async def g(self):\n            return 1\n    def h(self):\n        return torch.zeros(2)\n",
    "one-line class": "class A: pass\ndef f(n):\n    return torch.zeros(n)\n",
    "last line short": "def helper(a):\n    return (a,\n)\n\ndef f(n):\n    return torch.zeros(n)\n",
    "no final newline": "def helper(a):\n    return a\ndef f(n):\n    return torch.zeros(n)",
    "form feed": "def helper(a):\n    return a\n\x0c\ndef f(n):\n    return torch.zeros(n)\n",
}


def _needed_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(re.split(r"\r\n|\r|\n", text), 1) if "zeros" in line]


def _bound_names(tree: ast.Module, only_in: set[str] | None = None) -> list[tuple[str, str]]:
    """The names the module and each class body bind by `def` and `class` (a stubbed class's body binds none)."""
    found = []

    def visit(body, where):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if only_in is None or where in only_in:
                    found.append((where, node.name))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{where}.{node.name}")

    visit(tree.body, "")
    return sorted(found)


def _classes(tree: ast.Module):
    """(where, class) for every class in the module and class bodies."""
    found, todo = [], [("", tree.body)]
    while todo:
        where, body = todo.pop()
        for node in body:
            if isinstance(node, ast.ClassDef):
                found.append((where, node))
                todo.append((f"{where}.{node.name}", node.body))
    return found


def _is_stub(node: ast.ClassDef) -> bool:
    only = node.body[0] if len(node.body) == 1 else None
    return isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant) and not str(only.value.value).strip()


@pytest.mark.parametrize("name", [name for name, _ in TEXTS] + list(EDGES))
def test_an_outline_keeps_length_lines_bindings_and_needed_lines(name):
    text = EDGES.get(name) or dict(TEXTS)[name]
    tree = ast.parse(text)
    needed = _needed_lines(text)
    result = outline(text, tree, needed)
    if result is None:
        return
    assert len(result) == len(text)
    assert [m.start() for m in re.finditer(r"\r\n|\r|\n", result)] == [m.start() for m in re.finditer(r"\r\n|\r|\n", text)]
    lines, original = re.split(r"\r\n|\r|\n", result), re.split(r"\r\n|\r|\n", text)
    assert all(lines[n - 1] == original[n - 1] for n in needed)
    outlined = ast.parse(result)
    kept = _bound_names(outlined)
    scopes = {""} | {f"{where}.{node.name}" for where, node in _classes(outlined) if not _is_stub(node)}
    assert kept == _bound_names(tree, only_in=scopes)


@pytest.mark.parametrize("name", list(EDGES))
def test_edge_cases_stub_and_parse_the_same_findings(name, monkeypatch):
    text = EDGES[name]
    outlined = outline(text, ast.parse(text), _needed_lines(text))
    if name != "one-line class":
        assert outlined is not None, "nothing was stubbed: the case tests nothing"
        module, whole = PythonModule(_source("m.py", text), outline=outlined), PythonModule(_source("m.py", text))
        assert module.outlined
        spans = [(module.span(call), module.text(call)) for call in module.calls()]
        assert spans and set(spans) <= {(whole.span(call), whole.text(call)) for call in whole.calls()}
    found = _findings(PYTHON_RULES, "m.py", "import torch\n" + text if "import torch" not in text else text)
    _whole_module(monkeypatch)
    assert found == _findings(PYTHON_RULES, "m.py", "import torch\n" + text if "import torch" not in text else text)


def test_an_outline_libcst_refuses_gives_way_to_the_file():
    text = "import torch\ndef f(n):\n    return torch.zeros(n)\n"
    module = PythonModule(_source("m.py", text), outline="def (:\n" + " " * (len(text) - 7))
    assert not module.outlined
    assert [module.text(call) for call in module.calls()] == ["torch.zeros(n)"]
