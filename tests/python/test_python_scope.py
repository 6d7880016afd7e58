"""The frontend's own index and name resolver give libcst's answers.

`PythonModule` replaced libcst's PositionProvider and QualifiedNameProvider
with one code-generator pass and a lazy resolver (python_scope.py). These
tests run both on tricky snippets and require the same answer for every
node: the same spans, the same parents, and the same qualified names with
the same sources (import, builtin, local).
"""

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import (
    Assignment,
    BuiltinAssignment,
    ImportAssignment,
    MetadataWrapper,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from optpatch.python_frontend import PythonModule, walk
from optpatch.source import SourceFile

SNIPPETS = {
    "import_alias": "import torch as t\nx = t.zeros(3)\ny = t.nn.functional.relu(x)\n",
    "from_import_alias": "from torch import zeros as z, empty\nz(3)\nempty(2)\n",
    "dotted_import": "import torch.nn.functional\nimport os.path\ntorch.nn.functional.relu(x)\ntorch.zeros(1)\nos.path.join(a)\nos.getcwd()\n",
    "dotted_import_as": "import torch.nn.functional as F\nF.relu(F.gelu(x))\n",
    "relative_imports": "from . import sibling\nfrom ..pkg.mod import thing as other\nfrom .mod import *\nsibling.f(other)\n",
    "parameter_shadows_import": "import torch\ndef f(torch, n):\n    return torch.zeros(n)\n",
    "local_shadows_import": "import torch\nimport numpy as np\ndef f(n):\n    torch = np\n    return torch.zeros(n)\n",
    "local_assigned_after_use": "import torch\ndef f(n):\n    x = torch.zeros(n)\n    torch = None\n    return x\n",
    "module_rebinding": "try:\n    import torch\nexcept ImportError:\n    torch = None\nx = torch.zeros(1)\n",
    "conditional_imports": "if a:\n    from numpy import zeros\nelse:\n    from torch import zeros\nzeros(3)\n",
    "class_attribute_is_not_visible_in_methods": (
        "import torch\nclass A:\n    torch = None\n    buf = torch\n    def m(self):\n        return torch.zeros(1)\n"
    ),
    "method_named_like_module_function": "class A:\n    def zeros(self):\n        return zeros(1)\n    z = zeros\n",
    "comprehension_variable": "import torch\nxs = [torch.zeros(1) for torch in range(3)]\nys = [t for t in torch.zeros(3)]\n",
    "nested_comprehension": "m = [[y for y in row if y] for row in rows]\nd = {k: v for k, v in items}\ns = {a for a in b for b in a}\ng = list(x for x in x)\n",
    "lambda_parameter": "import torch\nf = lambda torch, n=torch.zeros(1): torch.zeros(n)\ng = lambda: torch.zeros(1)\n",
    "defaults_and_annotations_in_enclosing_scope": (
        "import torch\ndef f(x: torch.Tensor = torch.zeros(1), *args: int, torch=None, **kw) -> torch.Tensor:\n"
        "    return torch\n"
    ),
    "global_and_nonlocal": (
        "import torch\ndef f():\n    global torch\n    torch = None\ndef g():\n    n = 1\n    def h():\n"
        "        nonlocal n\n        n = 2\n        return n\n    return h\ntorch.zeros(1)\n"
    ),
    "closures": "import torch\ndef outer():\n    zeros = torch.zeros\n    def inner(n):\n        return zeros(n)\n    return inner\n",
    "class_in_function": "def f():\n    x = 1\n    class C:\n        y = x\n        def m(self):\n            return x\n    return C\n",
    "builtins": "print(len(x))\nlen = 3\nlen\nopen = open\n",
    "bindings_of_every_kind": (
        "import torch\nwith open(p) as fh, torch.no_grad():\n    data = fh.read()\ntry:\n    pass\nexcept ValueError as err:\n"
        "    print(err)\nfor i, (a, *rest) in enumerate(xs):\n    total += i\nif (m := re.match(p, s)):\n    m.group(0)\n"
        "n: int = 3\nk: int\ndel n\nx = y = torch.zeros(1)\nx += 1\n"
    ),
    "async_code": "import torch\nasync def f(xs):\n    async for x in xs:\n        async with lock as l:\n            await torch.zeros(x)\n",
    "decorators_and_bases": (
        "import functools, torch\n@functools.lru_cache(maxsize=None)\ndef f(n):\n    return torch.zeros(n)\n"
        "class M(torch.nn.Module, metaclass=Meta):\n    @property\n    def w(self):\n        return self.weight\n"
    ),
    "attribute_of_unnamed_values": "x = ','.join(parts)\ny = (1).real\nz = torch.zeros(3).cuda()\nw = f()(1).a.b\n",
    "subscripted_chains": "import a.b\nv = a.b[0].c\nw = a.b.c[1]\nu = x[a.b.c]\n",
    "chained_calls": "import torch\nx = torch.zeros(3).to('cuda').cuda(0)\ny = torch.tensor(data).to(device=d)\n",
    "keywords_and_attributes": "import torch\ntorch.zeros(3, dtype=torch.float16, device=torch.device('cuda'))\nobj.torch.zeros(1)\n",
    "match_statement": "match cmd:\n    case [x, *rest]:\n        print(x)\n    case {'k': v}:\n        print(v)\n    case Point(x=0) as p:\n        print(p)\n",
    "fstrings_and_strings": "import torch\nname = f'{torch.zeros(1)!r:>10}'\ndoc = 'torch.zeros'\n",
    "star_targets_and_unpacking": "first, *middle, last = torch.zeros(3)\n[a, b] = c\n(d, (e, f)) = g\n",
    "use_before_definition": "def f():\n    return g()\ndef g():\n    return f\nclass A:\n    x = B\nclass B:\n    pass\n",
    "comprehension_clauses": (
        "table = {name: handler for name in names if (handler := lookup(name))}\n"
        "pairs = [(a, b) for a in xs for b in a.items() if b and a]\n"
        "flat = {c for token in vocab for c in token if c.isalpha() and token}\n"
    ),
    "typing_declarations": (
        "from typing import NewType, TypeVar, cast\nT = TypeVar('T', bound=int)\nname = 'U'\nU = TypeVar(name)\n"
        "UserId = NewType(name, int)\nx = cast('int', name)\n"
    ),
    "crlf_and_tabs": "import torch\r\ndef f(n):\r\n\tx = torch.zeros(n)\r\n\treturn x\r\n",
}


def _module(code: str) -> PythonModule:
    return PythonModule(SourceFile("snippet.py", Path("snippet.py"), code.encode(), code, "utf-8", False, "python"))


def _libcst_answers(tree: cst.Module):
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    return wrapper.resolve(PositionProvider), wrapper.resolve(QualifiedNameProvider)


@pytest.mark.parametrize("code", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_qualified_names_match_libcst_for_every_node(code):
    module = _module(code)
    _, qualified = _libcst_answers(module.tree)
    compared = 0
    for node, value in qualified.items():
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            continue  # names inside string annotations are not resolved (python_scope.py says so)
        theirs = {(q.name, q.source.name.lower()) for q in (value() if callable(value) else value)}
        mine = {(q.name, q.source) for q in module._names.qualified_names(node)}
        assert mine == theirs, f"{type(node).__name__} `{module.tree.code_for_node(node)}`"
        compared += bool(theirs)
    assert compared, "the snippet resolved no name at all"


@pytest.mark.parametrize("code", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_spans_and_parents_match_libcst(code):
    module = _module(code)
    positions, _ = _libcst_answers(module.tree)
    for node, code_range in positions.items():
        start = module.source.offset(code_range.start.line, code_range.start.column)
        end = module.source.offset(code_range.end.line, code_range.end.column)
        assert module.span(node) == (start, end), type(node).__name__
        assert module.start(node) == (code_range.start.line, code_range.start.column + 1)
    for node in walk(module.tree):
        for child in node.children:
            if child in positions:  # a node that prints nothing (whitespace before an absent `**rest`) has no place
                assert module.parent(child) is node


@pytest.mark.parametrize("code", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_walk_yields_the_same_nodes_as_libcst_children(code):
    module = _module(code)
    module.calls()  # builds the index that `walk` uses
    by_children, stack = [], [module.tree]
    while stack:
        node = stack.pop()
        by_children.append(node)
        stack.extend(reversed(node.children))
    printed = {id(n) for n in by_children if n in _libcst_answers(module.tree)[0]}
    assert printed <= {id(n) for n in walk(module.tree)} <= {id(n) for n in by_children}
    meaningful = (cst.Name, cst.Call, cst.Attribute, cst.BaseStatement, cst.BaseSmallStatement)
    assert [n for n in walk(module.tree) if isinstance(n, meaningful)] == [
        n for n in by_children if isinstance(n, meaningful)
    ]


def _described(assignment) -> tuple:
    kind = next(k for k in (ImportAssignment, BuiltinAssignment, Assignment) if isinstance(assignment, k)).__name__
    return kind, assignment.name, id(getattr(assignment, "node", None))


@pytest.mark.parametrize("code", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_bindings_match_libcst_scope_analysis(code):
    """`PythonModule.bindings(name)` is what `ScopeProvider`'s `scope[name.value]` was."""
    module = _module(code)
    scopes = MetadataWrapper(module.tree, unsafe_skip_copy=True).resolve(ScopeProvider)
    for node in walk(module.tree):
        if not isinstance(node, cst.Name):
            continue
        scope = scopes.get(node)
        mine = module.bindings(node)
        if scope is None:
            assert mine is None, f"`{node.value}` L{module.start(node)[0]}"
            continue
        assert sorted(map(_described, mine)) == sorted(map(_described, scope[node.value])), (
            f"`{node.value}` L{module.start(node)[0]}"
        )


def test_aliases_resolve_and_shadowed_names_are_refused():
    module = _module(
        "import torch as t\nfrom torch import zeros as z\n"
        "def f(torch, n):\n    a = t.zeros(n)\n    b = z(n)\n    c = torch.zeros(n)\n"
        "    d = [t.zeros(1) for t in n]\n    return a, b, c, d\n"
    )
    calls = {module.text(call): call for call in module.calls()}
    names = {"torch.zeros"}
    assert module.refers_to(calls["t.zeros(n)"].func, names) == "torch.zeros"
    assert module.refers_to(calls["z(n)"].func, names) == "torch.zeros"
    assert module.is_import(calls["z(n)"].func)
    assert module.refers_to(calls["torch.zeros(n)"].func, names) is None  # a parameter
    assert module.refers_to(calls["t.zeros(1)"].func, names) is None  # a comprehension variable
    assert module.qualified_names(calls["torch.zeros(n)"].func) == {"f.<locals>.torch.zeros"}
