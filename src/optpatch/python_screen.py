"""A first look at a Python file with the standard `ast`, for rules' `screen`.

Python's own parser is about ten times faster than libcst and needs no
import beyond the standard library, so a rule can reject a file whose
trigger words are only in comments, strings or unrelated calls before the
full frontend (python_frontend.py) is paid for.
"""

from __future__ import annotations

import ast
import warnings


class CallIndex:
    """The calls of one module, by the last name of their callee (`a.b.to(...)` -> "to"), and a few facts around them.

    One walk of the `ast` gathers everything a screen may ask: the calls, which
    of them is the whole value of `name = call`, the names that imports of
    `torch` bind (in any scope: a screen may over-approximate, never miss),
    and for `Rule.needs` the `from torch import` statements and the
    functions, by name.
    """

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self._by_name: dict[str, list[ast.Call]] = {}
        self._assigned_to: dict[int, str] = {}  # id(call) -> `name` in `name = call`
        self._calls_assigned: dict[str, list[ast.Call]] = {}  # `name` -> every call in `name = call` / `name: T = call`
        self.torch_names: set[str] = set()  # `torch`, `th` in `import torch as th`, `zeros` in `from torch import zeros`
        self.torch_imports: list[ast.ImportFrom] = []  # `from torch[.x] import ...`, in any scope
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}  # by name, in any scope
        # `global`, `nonlocal` and `:=`: a function holding one may bind a name outside itself
        self.outer_bindings: list[ast.AST] = []
        for node in ast.walk(tree):
            kind = type(node)
            if kind is ast.Call:
                name = callee_name(node)
                if name is not None:
                    self._by_name.setdefault(name, []).append(node)
            elif kind is ast.Assign:
                if len(node.targets) == 1 and type(node.targets[0]) is ast.Name and type(node.value) is ast.Call:
                    self._assigned_to[id(node.value)] = node.targets[0].id
                    self._calls_assigned.setdefault(node.targets[0].id, []).append(node.value)
            elif kind is ast.AnnAssign:
                if type(node.target) is ast.Name and type(node.value) is ast.Call:
                    self._calls_assigned.setdefault(node.target.id, []).append(node.value)
            elif kind is ast.Import:
                for alias in node.names:
                    if _is_torch(alias.name):
                        self.torch_names.add(alias.asname or alias.name.split(".")[0])
            elif kind is ast.ImportFrom:
                if node.level == 0 and _is_torch(node.module or ""):
                    self.torch_names.update(alias.asname or alias.name for alias in node.names)
                    self.torch_imports.append(node)
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self.functions.setdefault(node.name, []).append(node)
            elif kind is ast.Global or kind is ast.Nonlocal or kind is ast.NamedExpr:
                self.outer_bindings.append(node)

    @classmethod
    def of(cls, text: str) -> "CallIndex | None":
        """The index of `text`, or None when `ast` cannot parse it."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences and the like are not ours to report
                return cls(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def named(self, *names: str) -> list[ast.Call]:
        """The calls whose callee is `name(...)` or `<anything>.name(...)`, in no particular order."""
        return [call for name in names for call in self._by_name.get(name, ())]

    def assigned_to(self, call: ast.Call) -> str | None:
        """`name` when `call` is the whole value of `name = call`, else None."""
        return self._assigned_to.get(id(call))

    def calls_assigned(self, name: str) -> list[ast.Call]:
        """Every call assigned to `name` anywhere in the module (`name = call`, `name: T = call`)."""
        return self._calls_assigned.get(name, [])

    def calls_torch(self, call: ast.Call) -> bool:
        """True when the callee's root name is bound by an import of torch (`torch.cat`, `th.zeros`, `zeros`)."""
        return root_name(call.func) in self.torch_names


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def root_name(node: ast.expr) -> str | None:
    """`a` for `a.b.c`, None for a callee that does not start with a name."""
    while type(node) is ast.Attribute:
        node = node.value
    return node.id if type(node) is ast.Name else None


def callee_name(call: ast.Call) -> str | None:
    """The last name of a call's callee: "to" for `a.b.to(...)`, "zeros" for `zeros(...)`; None for `f()(...)`."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
