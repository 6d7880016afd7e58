"""Edits that gain nothing: where a Python rule's rewrite would be correct and worthless (issue 28, point 4).

A rule asks these before it offers a fix, and gives advice or keeps the site
instead, whatever it would rewrite:

- `rebound_before_read`: the value is a dead store, assigned to a local that
  is assigned again before anything reads it. Rewriting how it is made
  saves nothing; deleting the line would (advice, `KeepCategory.DEAD_STORE`).
- `read_back_at_once`: the statement that makes the value reads it back on
  the host at once (`.item()`, `.tolist()`, an assertion, a condition, a
  slice bound, `int(...)`): the host waits for the GPU there anyway, so a
  copy made asynchronous only moves the stall (OPT103).
- `literal_elements`: how many numbers a literal display spells, for the
  tiny constants a test compares against (OPT103).

(A zeros zeroed again before any read is OPT101's own proof's to see:
analysis/overwrite.py marks such a step `zeroes`.)

Each answers from one function's text and says "no" when in doubt: a fix
kept as a fix is never wrong here, only worth little.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from optpatch.python_frontend import SCOPE_NODES, PythonModule, walk

_READ_BACK_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
_READ_BACK_BUILTINS = frozenset({"int", "float", "bool", "complex"})
_DYNAMIC_READS = frozenset({"locals", "vars", "eval", "exec"})


@dataclass(frozen=True)
class Rebound:
    """A dead store: the local it is assigned to, and the line that assigns it again before any read."""

    name: str
    line: int

    def advice(self, what: str) -> str:
        return (f"`{self.name}` is assigned again on L{self.line} before anything reads it: {what} is never used, so "
                "rewriting it gains nothing; delete the assignment (unless the call is there for an error it raises)")


def rebound_before_read(module: PythonModule, value: cst.BaseExpression) -> Rebound | None:
    """Whether VALUE (the site's result; a method chain on it counts as it) is assigned to a local of a function
    that the same block assigns again before any statement reads it.

    Only straight-line code counts: the statements between may not mention
    the name, and may not `break` or `continue` (code after the loop could
    read it); no `try` or `with` may hold the assignment (a handler, or a
    context manager that swallows an error, could reach a read); the
    function may not read names dynamically (`locals()`, `eval`) or share
    the name with a nested scope or another (`global`, `nonlocal`).
    """
    value = _outermost_chain(module, value)
    statement = module.parent(value)
    name = _assigned_local(statement, value)
    line = module.parent(statement) if name is not None else None
    block = module.parent(line) if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    function = module.enclosing_function(statement) if isinstance(block, cst.IndentedBlock) else None
    if function is None or module.enclosing(statement, SCOPE_NODES) is not function:
        return None
    if any(isinstance(a, (cst.Try, cst.TryStar, cst.With)) for a in _ancestors_within(module, statement, function)):
        return None
    if _shared_or_dynamic(function, name):
        return None
    index = next(i for i, each in enumerate(block.body) if each is line)
    for later in block.body[index + 1 :]:
        if isinstance(later, cst.SimpleStatementLine) and len(later.body) == 1:
            again = _assigned_local(later.body[0], getattr(later.body[0], "value", None))
            if again == name and not _mentions(later.body[0].value, name):
                return Rebound(name, module.start(later)[0])
        if _mentions(later, name) or any(isinstance(node, (cst.Break, cst.Continue)) for node in walk(later)):
            return None
    return None


def _outermost_chain(module: PythonModule, node: cst.BaseExpression) -> cst.BaseExpression:
    """`f(...).cuda().to(dt)` for `f(...)`: the methods called on the value make the value that is stored."""
    while True:
        parent = module.parent(node)
        grand = module.parent(parent) if isinstance(parent, cst.Attribute) and parent.value is node else None
        if not (isinstance(grand, cst.Call) and grand.func is parent):
            return node
        node = grand


def _assigned_local(statement, value) -> str | None:
    """`name` in `name = value` / `name: T = value`, a single plain name; else None."""
    if isinstance(statement, cst.Assign) and statement.value is value and len(statement.targets) == 1:
        target = statement.targets[0].target
    elif isinstance(statement, cst.AnnAssign) and statement.value is value and value is not None:
        target = statement.target
    else:
        return None
    return target.value if isinstance(target, cst.Name) else None


def _ancestors_within(module: PythonModule, node: cst.CSTNode, function: cst.FunctionDef):
    for ancestor in module.ancestors(node):
        if ancestor is function:
            return
        yield ancestor


def _shared_or_dynamic(function: cst.FunctionDef, name: str) -> bool:
    """The function reads names dynamically, declares NAME global or nonlocal, or a nested scope mentions it."""
    for node in walk(function.body):
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in node.names):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _DYNAMIC_READS:
            return True
        if isinstance(node, SCOPE_NODES) and _mentions(node, name):
            return True
    return False


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(found, cst.Name) and found.value == name for found in walk(node))


def read_back_at_once(module: PythonModule, value: cst.BaseExpression) -> str | None:
    """What in VALUE's own statement reads it back on the host at once, as a phrase; None when nothing does.

    VALUE counts as read back when an expression computed from it, in the
    same statement, is asserted, tested by `if`/`while`/a conditional
    expression, converted by `.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
    `int()`, `float()`, `bool()`, or used as a slice bound.
    """
    child = value
    for ancestor in module.ancestors(value):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement, *SCOPE_NODES)):
            if isinstance(ancestor, cst.Assert) and child is ancestor.test:
                return "an assertion reads it"
            if isinstance(ancestor, (cst.If, cst.While)) and child is ancestor.test:
                return f"`{type(ancestor).__name__.lower()}` tests it"
            return None
        found = _reads_back(module, ancestor, child)
        if found is not None:
            return found
        child = ancestor
    return None


def _reads_back(module: PythonModule, node: cst.CSTNode, child: cst.CSTNode) -> str | None:
    if isinstance(node, cst.IfExp) and child is node.test:
        return "a conditional expression tests it"
    if isinstance(node, cst.Slice):
        return "it is a slice bound, which Python reads as an integer"
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and child is node.func \
            and node.func.attr.value in _READ_BACK_METHODS:
        return f"`.{node.func.attr.value}()` copies it back to the host"
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _READ_BACK_BUILTINS \
            and child is not node.func and module.qualified_names(node.func) == {f"builtins.{node.func.value}"}:
        return f"`{node.func.value}()` reads it as a Python number"
    return None


def literal_elements(node: cst.BaseExpression) -> int | None:
    """How many numbers a literal spells: a number, or a (nested) list or tuple display of numbers; None otherwise."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    if isinstance(node, (cst.Integer, cst.Float)) or (isinstance(node, cst.Name) and node.value in ("True", "False")):
        return 1
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    total = 0
    for element in node.elements:
        if isinstance(element, cst.StarredElement):
            return None
        inner = literal_elements(element.value)
        if inner is None:
            return None
        total += inner
    return total
