"""libcst parses an outline of the file when every rule says what it needs (python_outline.py).

The outline must change no finding: every Python rule is run over every
Python fixture, example and rule example, and over modules written so that
a rule's site depends on another function, with and without the outline.
Each of a rule's `needs` is dropped in turn to show that the test notices.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from optpatch import passes
from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
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
    "a move at the end of a chain": (
        "OPT102", lambda node: isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func.value, ast.Call),
        "import torch\n\nclass Runner:\n    def setup(self):\n        self.x = 1\n\n"
        "    def step(self, n, k):\n        return torch.arange(n).view(-1, 1).repeat(1, k).int().cuda()\n",
    ),
    "a chain assigned, then moved": (
        "OPT102", lambda node: isinstance(node.func.value, ast.Name),
        "import torch\n\nclass Runner:\n    def setup(self):\n        self.x = 1\n\n"
        "    def step(self, n):\n        t = torch.arange(n).view(-1, 1)\n        t = t.to('cuda')\n        return t\n",
    ),
    "a copy whose source is built earlier in its method": (
        "OPT103", lambda node: True,
        "import torch\n\nclass Runner:\n    def setup(self):\n        self.x = 1\n\n"
        "    def step(self, ids: list[int]):\n        t = torch.tensor(ids)\n        t[0] = 0\n"
        "        return t.cuda().sum()\n\n    def teardown(self):\n        del self.x\n",
    ),
}


# A `global` elsewhere: the outline keeps its function only when code that stays reads the name, or a rule
# resolves the name in a stubbed function (`Rule.resolved_in_stubs`).
GLOBALS = {
    "read only in stubbed functions": (
        {"set_cache", "get_cache"},
        "import torch\n\n_CACHE = None\n\ndef set_cache(c):\n    global _CACHE\n    _CACHE = c\n\n"
        "def get_cache():\n    return _CACHE\n\ndef f(n, y):\n    x = torch.zeros(n)\n    x.copy_(y)\n    return x\n",
    ),
    "a nonlocal binds inside its own def": (
        {"counter"},
        "import torch\n\ndef counter():\n    n = 0\n    def bump():\n        nonlocal n\n        n += 1\n    return bump\n\n"
        "def f(n, y):\n    x = torch.zeros(n)\n    x.copy_(y)\n    return x\n",
    ),
    "read by a function another global keeps": (
        set(),
        "import torch\n\nDEVICE = torch.device('cuda')\nOTHER = 'cpu'\n\ndef f(n):\n    return torch.arange(n).to(DEVICE)\n\n"
        "def use_other():\n    global DEVICE\n    DEVICE = OTHER\n\ndef set_other(o):\n    global OTHER\n    OTHER = o\n",
    ),
    "the callee of a site judged alone": (
        {"f"},
        "import torch\n\ndef f(g, n):\n    g(torch.zeros(n))\n\ndef rebind():\n    global torch\n    torch = object()\n",
    ),
}


def _stubbed_functions(text: str) -> set[str]:
    source = _source("m.py", text)
    wanted, calls = passes._screened([rule for rule in PYTHON_RULES if rule.wants(source)], source)
    outlined = ast.parse(passes._outline(wanted, calls, source) or text)
    return {node.name for node in outlined.body if isinstance(node, ast.FunctionDef) and _is_stub(node)}


@pytest.mark.parametrize("case", list(GLOBALS), ids=lambda case: re.sub(r"\W+", "-", case))
def test_a_global_keeps_its_function_only_where_its_name_is_read(case):
    expected, text = GLOBALS[case]
    assert _stubbed_functions(text) == expected


def test_a_global_rebinding_the_callee_of_a_site_judged_alone_is_kept(monkeypatch):
    """Stubbing `rebind` would make `torch.zeros` torch's again for the site in `f`: the findings would change."""
    text = GLOBALS["the callee of a site judged alone"][1]
    expected = _findings(PYTHON_RULES, "m.py", text)
    _whole_module(monkeypatch)
    assert _findings(PYTHON_RULES, "m.py", text) == expected
    monkeypatch.undo()
    monkeypatch.setattr(RULE["OPT101"], "resolved_in_stubs", classmethod(lambda cls, calls: set()))
    assert _stubbed_functions(text) == {"f", "rebind"}
    assert _findings(PYTHON_RULES, "m.py", text) != expected


# OPT101 judges these allocations from the `ast` alone (rules/opt101/alone.py): their functions are stubbed.
_HEAD = "import torch\nimport numpy as np\nfrom torch import zeros as z\n\ndef keep_me(n, y):\n    x = torch.zeros(n)\n    x.copy_(y)\n    return x\n\n"
JUDGED_ALONE = {
    "passed, returned, used at once": _HEAD + (
        "def f(g, n, y):\n    g(torch.zeros(n))\n    g(y, key=torch.zeros_like(y))\n    g(*torch.zeros(2), **torch.zeros(1))\n"
        "    torch.zeros(n).sum()\n    return torch.zeros(n).cuda()\n"
    ),
    "stored, unpacked, several names, out=": _HEAD + (
        "class Box:\n    def put(self, other, n, y):\n        other.buf = torch.zeros(n)\n        a, b = torch.zeros(2, n)\n"
        "        c = d = y.new_zeros(n)\n        torch.zeros(n, out=y)\n        return [torch.zeros(n)], {'k': z(n)}\n"
    ),
    "contexts: loop, forward, cached, lambda, class, test": _HEAD + (
        "import functools\n\ndef f(g, n):\n    for i in range(n):\n        g(torch.zeros(i))\n    while n:\n        n = g(torch.zeros(n))\n\n"
        "def forward(g, n):\n    return g(torch.zeros(n))\n\n@functools.lru_cache\ndef table(n):\n    return torch.zeros(n).to('cuda')\n\n"
        "def make(n):\n    h = lambda m=torch.zeros(n): m\n    class Local:\n        field = torch.zeros(n)\n    return h, Local\n\n"
        "def test_it(g):\n    g(torch.zeros(3))\n"
    ),
    "not torch's, non-ASCII, nested": _HEAD + (
        "def f(g, n):\n    g('é中', np.zeros(n), torch.zeros(n))\n    def inner():\n        return torch.zeros(n)\n    return inner\n"
    ),
    "a module name rebound (never torch's)": "import torch\ntorch = object()\n\ndef f(g, n):\n    g(torch.zeros(n))\n",
}
# The same shapes where something inside the function (or the module) decides what the callee is: libcst must see them.
NOT_ALONE = {
    "a parameter named torch": ("binds_anywhere", _HEAD + "def f(g, torch, n):\n    g(torch.zeros(n))\n"),
    "an import inside": ("binds_anywhere", _HEAD + "def f(g, n):\n    import numpy as torch\n    g(torch.zeros(n))\n"),
    "a nested function's local": ("binds_anywhere", _HEAD + "def f(g, n):\n    def h(z):\n        return g(z(n))\n    return h\n"),
    "a comprehension variable": ("binds_anywhere", _HEAD + "def f(g, ns):\n    return [g(torch.zeros(n)) for torch in ns]\n"),
    "a star import with a bare zeros": ("star_import", "from torch import zeros\nfrom numpy import *\n\ndef f(g, n):\n    g(zeros(n))\n"),
    "a new_zeros receiver that is an import": ("imported_names", _HEAD + "def f(g, n):\n    import numpy as x\n    g(x.new_zeros(n))\n"),
    "the name of a TypeVar": ("TypeVar", _HEAD + "from typing import TypeVar\n\ndef f(n):\n    return TypeVar(torch.zeros(n))\n"),
    "a decorator": (None, _HEAD + "def f():\n    @torch.zeros(3)\n    def g():\n        pass\n"),
    "a class keyword": (None, _HEAD + "def f():\n    class A(metaclass=torch.zeros(3)):\n        pass\n"),
}


def _texts() -> list[tuple[str, str]]:
    paths = sorted((ROOT / "tests/fixtures/python").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]
    for rule in PYTHON_RULES:
        found += [(f"{rule.code}-valid-{i}.py", text) for i, text in enumerate(rule.VALID)]
        found += [(f"{rule.code}-invalid-{i}.py", example.code) for i, example in enumerate(rule.INVALID)]
    found += [(f"alone-{i}.py", text) for i, text in enumerate(JUDGED_ALONE.values())]
    found += [(f"not-alone-{i}.py", text) for i, (_, text) in enumerate(NOT_ALONE.values())]
    found += [(f"globals-{i}.py", text) for i, (_, text) in enumerate(GLOBALS.values())]
    return found + [(f"elsewhere-{i}.py", text) for i, (_, _, text) in enumerate(ELSEWHERE.values())]


TEXTS = _texts()


def _source(name: str, text: str) -> SourceFile:
    return SourceFile(name, Path(name), text.encode(), text, "utf-8", False, "python")


def _findings(rules, name: str, text: str) -> list[tuple]:
    result = analyse_file(_source(name, text), rules, Settings(), FixPolicy(unsafe_fixes=True))
    error = result.error.reason if result.error else None
    return [(f.code, f.line, f.col, f.verdict, f.fix, f.reason) for f in result.findings] + [error, result.new]


def _whole_module(monkeypatch) -> None:
    monkeypatch.setattr(passes, "_outline", lambda rules, calls, source: None)


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
        wanted, calls = passes._screened([rule for rule in PYTHON_RULES if rule.wants(source)], source)
        if wanted and passes._outline(wanted, calls, source) is not None:
            stubbed += 1
    assert stubbed >= len(ELSEWHERE) + 5


@pytest.mark.parametrize("case", list(ELSEWHERE), ids=lambda case: re.sub(r"\W+", "-", case))
def test_each_need_is_needed(case, monkeypatch):
    """Without the nodes the case is about, the outline stubs what the verdict depends on, and it changes."""
    owner, dropped, text = ELSEWHERE[case]
    expected = _findings(PYTHON_RULES, "m.py", text)
    if owner == "outer":
        index = CallIndex.of

        def without_outer_bindings(source_text, tree=None):
            calls = index(source_text, tree)
            calls.outer_bindings = [node for node in calls.outer_bindings if not dropped(node)]
            return calls

        monkeypatch.setattr(CallIndex, "of", staticmethod(without_outer_bindings))
    else:
        rule = RULE[owner]
        needs = rule.needs.__func__
        monkeypatch.setattr(rule, "needs", classmethod(lambda cls, calls: [n for n in needs(cls, calls) if not dropped(n)]))
    assert _findings(PYTHON_RULES, "m.py", text) != expected


def _opt101_module(name: str):
    """A module of OPT101's package (`alone` for rules/opt101/alone.py), as the rule loader imported it."""
    return sys.modules[f"{RULE['OPT101'].__module__.rpartition('.')[0]}.{name}"]


def _stubbed_sites(text: str) -> list[int]:
    """The lines of the allocations OPT101 (run alone) judged from the `ast`: the outline stubbed their function."""
    source = _source("m.py", text)
    wanted, calls = passes._screened([RULE["OPT101"]], source)
    module = passes.parse(source, calls, passes._outline(wanted, calls, source))
    allocations = _opt101_module("allocation").allocations(calls)
    return [call.lineno for call in allocations if module.stubbed(call)]


@pytest.mark.parametrize("case", list(JUDGED_ALONE), ids=lambda case: re.sub(r"\W+", "-", case))
def test_sites_judged_alone_are_stubbed_and_still_reported(case):
    text = JUDGED_ALONE[case]
    stubbed = _stubbed_sites(text)
    assert stubbed, "no allocation was judged from the ast: the case tests nothing"
    reported = {line for code, line, *_ in _findings([RULE["OPT101"]], "m.py", text)[:-2]}
    if "never torch's" in case:
        assert not reported & set(stubbed)
    else:
        torch_sites = {n for n, line in enumerate(text.splitlines(), 1) if re.search(r"torch\.zeros|z\(n\)|y\.new_zeros", line)}
        assert set(stubbed) & torch_sites and set(stubbed) & torch_sites <= reported


@pytest.mark.parametrize("case", list(NOT_ALONE), ids=lambda case: re.sub(r"\W+", "-", case))
def test_sites_whose_callee_their_function_decides_are_not_judged_alone(case, monkeypatch):
    """libcst's tree keeps them; without the check that keeps them, the findings change."""
    check, text = NOT_ALONE[case]
    assert _stubbed_sites(text) == []
    if check is None:
        return  # a shape `judged_alone` leaves to libcst outright
    expected = _findings([RULE["OPT101"]], "m.py", text)
    if check == "binds_anywhere":
        monkeypatch.setattr(CallIndex, "binds_anywhere", lambda self, function, name: False)
    elif check == "TypeVar":
        monkeypatch.setattr(_opt101_module("alone"), "callee_name", lambda call: None)
    else:
        index = CallIndex.of

        def forgetting(source_text, tree=None):
            calls = index(source_text, tree)
            setattr(calls, check, set() if check == "imported_names" else False)
            return calls

        monkeypatch.setattr(CallIndex, "of", staticmethod(forgetting))
    assert _findings([RULE["OPT101"]], "m.py", text) != expected


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


def _is_stub(node: ast.ClassDef | ast.FunctionDef) -> bool:
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


def test_a_file_libcst_refuses_only_in_a_stubbed_function_gets_its_fix(monkeypatch):
    """CPython reads this tab in an indentation as consistent, libcst does not (a mutant of NeMo found it).
    The outline stubs `helper`, so libcst analyses `f` and plans its fix; the safety net parses what the
    fix wrote (`f`, with the module's statements) with libcst, and all of it with CPython, so the fix is
    applied. Parsing the whole module instead gives libcst's syntax error: the one difference the outline
    makes, by design (python_outline.py)."""
    text = (
        "import torch\n\ndef helper(c):\n    if c:\n   \t     g = 1\n    return 2\n\n"
        "def f(y):\n    x = torch.zeros(y.shape)\n    x.copy_(y)\n    return x\n"
    )
    ast.parse(text)
    outlined = _findings(PYTHON_RULES, "m.py", text)
    assert outlined[-2] is None and outlined[-1] == text.replace("torch.zeros", "torch.empty").encode()
    _whole_module(monkeypatch)
    whole = _findings(PYTHON_RULES, "m.py", text)
    assert whole == [whole[-2], None] and whole[-2].startswith("syntax error (libcst)")


# A generated table of literal data (issue 33, point 8: 60,000 rows cost libcst minutes): 2,000 rows here.
_ROWS = "".join(f"    ({i}, {i * 0.5}, 'name_{i}', \"label {i % 97}\", -{i % 13}, 1+2j),  # row {i}\n" for i in range(2000))
TABLES = {
    "read by no code": f"import torch\n\nTÄBLE = [\n{_ROWS}]\n\ndef f(n):\n    x = torch.zeros(n)\n    x.fill_(1)\n    return x\n",
    "read by a stubbed function, annotated, CRLF": (
        "import torch\r\nTABLE: list = (\r\n" + _ROWS.replace("\n", "\r\n") + ")\r\n\r\ndef rows():\r\n    return TABLE\r\n\r\n"
        "def f(n, y):\r\n    x = torch.zeros(n)\r\n    x.copy_(y)\r\n    return x\r\n"
    ),
}
# Tables the outline must keep: a kept function reads them, or they hold a name, a call, a site.
KEPT_TABLES = {
    "read by the site's function": f"import torch\n\nSIZES = [\n{_ROWS}]\n\ndef f(y):\n    x = torch.zeros(len(SIZES))\n    x.copy_(y)\n    return x\n",
    "read at module level": f"import torch\n\nSIZES = [\n{_ROWS}]\nN = len(SIZES)\n\ndef f(y):\n    return torch.zeros(N)\n",
    "holding a name": f"import torch\n\nK = 3\nSIZES = [\n{_ROWS}    K,\n]\n\ndef f(y):\n    return torch.zeros(y)\n",
    "holding a site": f"import torch\n\nSIZES = [\n{_ROWS}    torch.zeros(3),\n]\n",
}


def _outlined(text: str) -> str:
    source = _source("m.py", text)
    wanted, calls = passes._screened([rule for rule in PYTHON_RULES if rule.wants(source)], source)
    return passes._outline(wanted, calls, source) or text


@pytest.mark.parametrize("case", list(TABLES), ids=lambda case: re.sub(r"\W+", "-", case))
def test_a_large_table_no_kept_code_reads_is_stubbed_with_the_same_findings(case, monkeypatch):
    text = TABLES[case]
    outlined = _outlined(text)
    assert len(outlined) == len(text) and "name_1999" not in outlined, "the table was not stubbed"
    assert re.sub(r"\s", "", outlined).count("=()") == 1
    assert [m.start() for m in re.finditer(r"\r\n|\r|\n", outlined)] == [m.start() for m in re.finditer(r"\r\n|\r|\n", text)]
    expected = _findings(PYTHON_RULES, "m.py", text)
    assert expected[-1] is not None and len(expected) > 2, "no fix: the case tests nothing"
    _whole_module(monkeypatch)
    assert _findings(PYTHON_RULES, "m.py", text) == expected


@pytest.mark.parametrize("case", list(KEPT_TABLES), ids=lambda case: re.sub(r"\W+", "-", case))
def test_a_table_kept_code_reads_or_that_holds_code_is_kept(case):
    assert "name_1999" in _outlined(KEPT_TABLES[case])


def test_the_safety_net_parses_no_untouched_table(monkeypatch):
    """libcst parses what the rewrite wrote, not the 2,000 rows beside it."""
    import libcst

    from optpatch.python_frontend import rewrite_error

    text = TABLES["read by no code"]
    parsed = []
    parse_module = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda code: parsed.append(code) or parse_module(code))
    rewritten = text.replace("torch.zeros", "torch.empty")
    line = text[: text.index("torch.zeros")].count("\n") + 1
    assert rewrite_error(_source("m.py", text), _source("m.py", rewritten), [line]) is None
    assert parsed and all("name_1999" not in code and "torch.empty" in code for code in parsed)
