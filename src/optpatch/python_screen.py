"""A first look at a Python file with the standard `ast`, for rules' `screen`.

Python's own parser is about ten times faster than libcst and needs no
import beyond the standard library, so a rule can reject a file whose
trigger words are only in comments, strings or unrelated calls before the
full frontend (python_frontend.py) is paid for.
"""

from __future__ import annotations

import ast
import warnings
from bisect import bisect_right


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
        # `torch`, `th` in `import torch as th`, `zeros` in `from torch import zeros`, and `torch` where it is assigned
        self.torch_names: set[str] = set()
        self.torch_imports: list[ast.ImportFrom] = []  # `from torch[.x] import ...`, in any scope
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}  # by name, in any scope
        # `global` and `:=`: a def or class holding one may bind a name outside itself (`bound_outside`). Not
        # `nonlocal`: it binds in a function that encloses it, and python_outline.py stubs no def inside a function.
        self.outer_bindings: list[ast.Global | ast.NamedExpr] = []
        self.imported_names: set[str] = set()  # every name an import binds, in any scope (`a` for `import a.b`)
        self.star_import = False  # a `from m import *` anywhere
        self._functions_around: dict[int, _FunctionFacts] = {}  # id(outermost def) -> its facts, on demand
        self._reads: dict[str, list[int]] | None = None  # name -> lines that read it, on demand
        self._outermost: tuple[list[int], list[tuple]] | None = None  # the defs no def holds, by first line, on demand
        for node in _walk(tree):
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
                    bound = alias.asname or alias.name.split(".")[0]
                    self.imported_names.add(bound)
                    if _is_torch(alias.name):
                        self.torch_names.add(bound)
            elif kind is ast.ImportFrom:
                self.imported_names.update(alias.asname or alias.name for alias in node.names)
                self.star_import = self.star_import or node.names[0].name == "*"
                if node.level == 0 and _is_torch(node.module or ""):
                    self.torch_names.update(alias.asname or alias.name for alias in node.names)
                    self.torch_imports.append(node)
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self.functions.setdefault(node.name, []).append(node)
            elif kind is ast.Global or kind is ast.NamedExpr:
                self.outer_bindings.append(node)
            elif kind is ast.Name and node.id == "torch" and type(node.ctx) is ast.Store:
                # `torch = pytest.importorskip("torch")`, `torch = lazy_import("torch")`: python_scope names what an
                # assignment binds as it is spelled, so the check reads `torch.zeros` here as torch's.
                self.torch_names.add("torch")

    @classmethod
    def of(cls, text: str, tree: ast.Module | None = None) -> "CallIndex | None":
        """The index of `text`, or None when `ast` cannot parse it. TREE: its `ast`, when the caller parsed it."""
        tree = tree if tree is not None else parse_module(text)
        if tree is None:
            return None
        try:
            return cls(tree)
        except RecursionError:
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
        """True when the callee's root name is bound by an import of torch (`torch.cat`, `th.zeros`, `zeros`), or is
        `torch` bound by an assignment."""
        return root_name(call.func) in self.torch_names

    def reads(self) -> dict[str, list[int]]:
        """The lines where each name is read (loaded, deleted or augmented), in any scope.

        What python_outline.py asks before it stubs a function whose `global`
        or `:=` binds a name outside it: whether code that stays reads it.
        Walked on first use: only files with such a function need it.
        """
        if self._reads is None:
            reads: dict[str, list[int]] = {}
            for node in _walk(self.tree):
                kind = type(node)
                if kind is ast.Name:
                    if type(node.ctx) is not ast.Store:
                        reads.setdefault(node.id, []).append(node.lineno)
                elif kind is ast.AugAssign and type(node.target) is ast.Name:
                    reads.setdefault(node.target.id, []).append(node.lineno)
            self._reads = reads
        return self._reads

    # -- a node's own function, for verdicts that need nothing else of it ----------------------------

    def outermost_function(self, node: ast.expr) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The `def` that holds `node` and is held by no other `def` (decorators count as part of it)."""
        if self._outermost is None:
            self._outermost = _outermost_functions(self.functions)
        firsts, spans = self._outermost
        index = bisect_right(firsts, node.lineno) - 1
        if index < 0 or spans[index][1] < node.lineno:
            return None
        return spans[index][2]

    def ancestors(self, node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
        """`node`'s parents, innermost first, up to and including `function` (which must hold it)."""
        parent_of = self._facts(function).parents
        found, parent = [], parent_of.get(id(node))
        while parent is not None:
            found.append(parent)
            if parent is function:
                return found
            parent = parent_of.get(id(parent))
        raise ValueError("the node is not inside the function")

    def in_one_block(self, first: ast.AST, second: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """True when the statements holding FIRST and SECOND (both inside FUNCTION) are in one statement list: a
        body, an `else`, a `finally`."""
        return _statement_list(first, self.ancestors(first, function)) == _statement_list(
            second, self.ancestors(second, function))

    def binds_anywhere(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
        """True when any scope inside `function` (itself, nested functions, lambdas, classes,
        comprehensions) binds `name` in any way, or declares it `global`/`nonlocal`."""
        return name in self._facts(function).bound

    def _facts(self, function) -> "_FunctionFacts":
        facts = self._functions_around.get(id(function))
        if facts is None:
            facts = self._functions_around[id(function)] = _FunctionFacts.of(function)
        return facts



def _statement_list(node: ast.AST, ancestors: list[ast.AST]) -> tuple[int, str] | None:
    """(id of the owner, field) of the statement list that holds NODE's statement, given its ANCESTORS."""
    child = node
    for parent in ancestors:
        if isinstance(child, ast.stmt):
            for field in ("body", "orelse", "finalbody"):
                statements = getattr(parent, field, None)
                if type(statements) is list and any(statement is child for statement in statements):
                    return id(parent), field
        child = parent
    return None


def parse_module(text: str) -> ast.Module | None:
    """The `ast` of a Python text, or None when Python's parser refuses it.

    The one parse a file's first look needs: the engine parses each file
    once, and hands the tree to both the call graph's index and the screens.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not ours to report
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _outermost_functions(functions: dict[str, list]) -> tuple[list[int], list[tuple]]:
    """The defs that no other def holds, as (first line, last line, def) in line order, and their first lines.

    A def's first line is its first decorator's. Defs nest or lie apart, so
    the ones no other def holds are apart, and a line lies in at most one:
    the last that starts at or before it. Found once, so that looking up
    each of a file's call sites costs a bisection, not a pass over every def.
    """
    spans = sorted(
        ((min((d.lineno for d in function.decorator_list), default=function.lineno), function.end_lineno, function)
         for named in functions.values() for function in named),
        key=lambda span: (span[0], -span[1]),
    )
    outermost: list[tuple] = []
    for span in spans:
        if not outermost or span[0] > outermost[-1][1]:
            outermost.append(span)
    return [span[0] for span in outermost], outermost


class _FunctionFacts:
    """One walk of a function: every node's parent, and every name bound anywhere inside."""

    __slots__ = ("parents", "bound")

    def __init__(self, parents: dict[int, ast.AST], bound: set[str]):
        self.parents = parents
        self.bound = bound

    @classmethod
    def of(cls, function: ast.FunctionDef | ast.AsyncFunctionDef) -> "_FunctionFacts":
        parents: dict[int, ast.AST] = {}
        bound: set[str] = {function.name}
        for node in _walk(function, parents):
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is not ast.Load:
                    bound.add(node.id)
            elif kind is ast.arg:
                bound.add(node.arg)
            elif kind is ast.alias:
                bound.add(node.asname or node.name.split(".")[0])
            elif kind is ast.Global or kind is ast.Nonlocal:
                bound.update(node.names)
            elif kind is ast.MatchMapping:
                if node.rest:
                    bound.add(node.rest)
            else:
                name = getattr(node, "name", None)  # def, class, `except E as name`, match captures, type parameters
                if isinstance(name, str):
                    bound.add(name)
        return cls(parents, bound)


def _walk(tree: ast.AST, parents: dict[int, ast.AST] | None = None):
    """Every node under `tree` (itself included) except expression contexts, in no particular order.

    `ast.walk`, about twice as fast: the fields that can hold nodes are
    listed once per node type, and `Load`/`Store` are skipped. With
    `parents`, also records each node's parent there (by `id`).
    """
    todo = [tree]
    pop, push, extend = todo.pop, todo.append, todo.extend
    while todo:
        node = pop()
        if not isinstance(node, ast.AST):
            continue  # `None` in a dict's keys, or a name in `global a, b`
        yield node
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            if type(value) is list:
                extend(value)
                if parents is not None:
                    for child in value:
                        parents[id(child)] = node
            elif value is not None:
                push(value)
                if parents is not None:
                    parents[id(value)] = node


def child_fields(kind: type) -> tuple[str, ...]:
    """The fields of an `ast` node type that may hold nodes, in `_fields` order (so `ast.iter_child_nodes`'s)."""
    fields = _NODE_FIELDS.get(kind)
    if fields is None:
        fields = _NODE_FIELDS[kind] = () if kind is ast.Constant else tuple(n for n in kind._fields if n not in _NOT_NODES)
    return fields


_NODE_FIELDS: dict[type, tuple[str, ...]] = {}
# Fields that never hold a node (or, `ctx`, one no screen asks about).
_NOT_NODES = frozenset(
    {"ctx", "id", "attr", "arg", "name", "asname", "module", "level", "kind", "type_comment", "conversion", "is_async",
     "simple", "rest", "kwd_attrs"}
)


def bound_outside(binding: ast.Global | ast.NamedExpr) -> frozenset[str]:
    """The names one of `CallIndex.outer_bindings` may bind outside the outermost def or class holding it.

    `global a, b`: both. `x := ...`: `x` (only in a decorator, a default or
    an annotation does it bind outside, but any counts).
    """
    if type(binding) is ast.Global:
        return frozenset(binding.names)
    return frozenset((binding.target.id,))  # the grammar allows only a name


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def root_name(node: ast.expr) -> str | None:
    """`a` for `a.b.c`, None for a callee that does not start with a name."""
    while type(node) is ast.Attribute:
        node = node.value
    return node.id if type(node) is ast.Name else None


def ast_dotted_name(node: ast.expr) -> str | None:
    """`python_frontend.dotted_name` for the `ast`: `a.b.c` for a chain of names, else None."""
    if type(node) is ast.Name:
        return node.id
    if type(node) is ast.Attribute:
        base = ast_dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def callee_name(call: ast.Call) -> str | None:
    """The last name of a call's callee: "to" for `a.b.to(...)`, "zeros" for `zeros(...)`; None for `f()(...)`."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def called_functions(tree: ast.Module, nodes: list[ast.AST]) -> list[ast.stmt]:
    """The first statement of each module-level `def` that `nodes` (a move's arguments, say) call by name: what a
    rule that follows those functions' returns (torch_values.classify) needs kept whole by the outline."""
    called = {node.func.id for root in nodes for node in ast.walk(root)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    if not called:
        return []
    return [statement.body[0] for statement in tree.body
            if isinstance(statement, ast.FunctionDef) and statement.name in called]
