"""Where an exception raised by a Python expression is part of what the program does.

A rewrite may change which call raises, the exception's message, or a
warning: harmless in ordinary code, where such an exception ends the
program either way, but not where the code expects or swallows it. Such a
block is a test of the exception (`pytest.raises`, `self.assertRaises*`,
`assertWarns*`, `pytest.warns`), a `contextlib.suppress`, or the body of a
`try` whose handler may catch what torch raises (`RuntimeError`,
`AssertionError`, `Exception`, a bare `except`, any name this file cannot
tell apart from those). Rules keep their sites there
(KeepCategory.EXPECTED_EXCEPTION).

The search climbs from the site to the function that holds it: a `def`
inside a `with pytest.raises(...)` runs elsewhere. A lambda passed to
`assertRaises(Error, lambda: ...)` runs inside the check, so the search
goes on through lambdas.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import BuiltinAssignment

from optpatch.python_frontend import PythonModule, dotted_name

# Context managers and functions that expect, or swallow, an exception or a warning.
EXPECTING_CALLS = frozenset(
    {"pytest.raises", "pytest.warns", "pytest.deprecated_call", "contextlib.suppress", "numpy.testing.assert_raises",
     "numpy.testing.assert_warns", "unittest.TestCase.assertRaises"}
)
# unittest's methods, on whatever receiver (`self`, a test case instance).
EXPECTING_METHOD_PREFIXES = ("assertRaises", "assertWarns", "assert_raises", "assert_warns")
# Builtin exceptions a torch call may raise (RuntimeError covers torch's own errors, AssertionError a torch
# built without CUDA), and their bases.
CAUGHT_BUILTINS = frozenset(
    {"BaseException", "Exception", "RuntimeError", "NotImplementedError", "AssertionError", "TypeError", "ValueError",
     "IndexError", "LookupError", "ArithmeticError", "OverflowError", "MemoryError", "SystemError"}
)


@dataclass(frozen=True)
class ExpectedException:
    """The block that expects or swallows the exception, and where it starts."""

    construct: str  # for the reason: "`with pytest.raises(...)` on L12"
    line: int


def expected_exception(module: PythonModule, node: cst.CSTNode) -> ExpectedException | None:
    """The innermost block around `node`, in its function, that expects or swallows an exception; else None."""
    child, deferred = node, False
    for ancestor in module.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return None
        found = None
        if isinstance(ancestor, cst.With) and child is ancestor.body:
            found = _expecting_with(module, ancestor)
        elif isinstance(ancestor, (cst.Try, cst.TryStar)) and child is ancestor.body:
            found = _catching_try(module, ancestor)
        elif deferred and isinstance(ancestor, cst.Call) and child in ancestor.args and _expects(module, ancestor):
            line = module.start(ancestor)[0]
            found = ExpectedException(f"`{_callee_text(module, ancestor)}(...)` on L{line}", line)
        if found is not None:
            return found
        deferred = deferred or isinstance(ancestor, cst.Lambda)  # an argument itself runs before the check does
        child = ancestor
    return None


def _expecting_with(module: PythonModule, statement: cst.With) -> ExpectedException | None:
    for item in statement.items:
        if isinstance(item.item, cst.Call) and _expects(module, item.item):
            line = module.start(statement)[0]
            return ExpectedException(f"`with {_callee_text(module, item.item)}(...)` on L{line}", line)
    return None


def _expects(module: PythonModule, call: cst.Call) -> bool:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value.startswith(EXPECTING_METHOD_PREFIXES):
        return True
    names = module.qualified_names(call.func) if isinstance(call.func, (cst.Name, cst.Attribute)) else set()
    return bool(names & EXPECTING_CALLS)


def _callee_text(module: PythonModule, call: cst.Call) -> str:
    return dotted_name(call.func) or module.text(call.func)


def _catching_try(module: PythonModule, statement: cst.Try | cst.TryStar) -> ExpectedException | None:
    for handler in statement.handlers:
        if handler.type is None or any(_may_catch(module, t) for t in _exception_types(handler.type)):
            spelled = "`except`" if handler.type is None else f"`except {module.text(handler.type)}`"
            line = module.start(statement)[0]
            return ExpectedException(f"a `try` on L{line} whose {spelled} (L{module.start(handler)[0]}) may catch it", line)
    return None


def _exception_types(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Tuple):
        return [element.value for element in node.elements]
    return [node]


def _may_catch(module: PythonModule, node: cst.BaseExpression) -> bool:
    """False only for a builtin exception torch does not raise, or a class this module defines."""
    if isinstance(node, cst.Name):
        bindings = module.bindings(node) or ()
        if bindings and all(isinstance(b, BuiltinAssignment) for b in bindings):
            return node.value in CAUGHT_BUILTINS
        if bindings and all(isinstance(getattr(b, "node", None), cst.ClassDef) for b in bindings):
            return False  # torch never raises an exception class of this module
    return True
