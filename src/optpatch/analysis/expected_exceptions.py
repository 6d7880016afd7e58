"""Blocks where an exception is part of the program's behaviour: a rewrite inside one may change what is raised.

`zeros` and `empty` (and their `_like` and `new_` forms) raise differently
for some receivers: a tensor subclass may implement one and not the other,
a backend may fail the fill. Code that expects an exception (`pytest.raises`,
`self.assertRaises*`, `assertWarns*`) or swallows one (`contextlib.suppress`,
a `try` whose handler catches it) observes that difference, so a rule keeps
a site inside such a block. A handler catches an allocation's exception
unless every type it names is one an allocation cannot raise (`ImportError`,
`KeyError`, ...), or its whole body is a bare `raise`: an unknown name may be
anything.
"""

from __future__ import annotations

import re

import libcst as cst

from optpatch.python_frontend import PythonModule

EXPECTING_MANAGERS = frozenset({"pytest.raises", "pytest.warns", "pytest.deprecated_call", "contextlib.suppress"})
# unittest's methods, on any receiver (`self.assertRaises(...)`, `cls.assertRaisesRegex(...)`).
EXPECTING_METHODS = re.compile(r"assert(Raises|Warns)\w*")
# Exception types an allocation cannot raise: a handler that names only these does not catch one.
UNRELATED_EXCEPTIONS = frozenset(
    "builtins." + name
    for name in (
        "ImportError", "ModuleNotFoundError", "KeyError", "FileNotFoundError", "FileExistsError", "IsADirectoryError",
        "NotADirectoryError", "PermissionError", "StopIteration", "StopAsyncIteration", "KeyboardInterrupt", "SystemExit",
        "GeneratorExit", "UnicodeDecodeError", "UnicodeEncodeError", "ConnectionError", "TimeoutError", "EOFError",
        "ZeroDivisionError",
    )
)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def expecting_block(module: PythonModule, node: cst.CSTNode) -> str | None:
    """The innermost block around `node`, inside its function, that expects or swallows its exception: how it reads."""
    child = node
    for ancestor in module.ancestors(node):
        if isinstance(ancestor, _SCOPES):
            return None
        if isinstance(ancestor, cst.With):
            manager = _expecting_manager(module, ancestor)
            if manager is not None:
                return f"inside `with {manager}` (L{module.start(ancestor)[0]}), which expects or swallows an exception"
        elif isinstance(ancestor, (cst.Try, cst.TryStar)) and child is ancestor.body:
            handler = _catching_handler(module, ancestor)
            if handler is not None:
                return f"inside a `try` whose handler `{handler}` (L{module.start(ancestor)[0]}) catches what it raises"
        child = ancestor
    return None


def _expecting_manager(module: PythonModule, node: cst.With) -> str | None:
    for item in node.items:
        manager = item.item
        callee = manager.func if isinstance(manager, cst.Call) else manager
        if isinstance(callee, cst.Attribute) and EXPECTING_METHODS.fullmatch(callee.attr.value):
            return " ".join(module.text(manager).split())[:60]
        if module.qualified_names(callee) & EXPECTING_MANAGERS:
            return " ".join(module.text(manager).split())[:60]
    return None


def _catching_handler(module: PythonModule, node: cst.Try | cst.TryStar) -> str | None:
    for handler in node.handlers:
        if _only_reraises(handler):
            continue  # the exception leaves as it came
        if handler.type is None:
            return "except:"
        types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for element in types:
            kind = element.value if isinstance(element, cst.Element) else element
            if not (module.qualified_names(kind) and module.qualified_names(kind) <= UNRELATED_EXCEPTIONS):
                return f"except {' '.join(module.text(handler.type).split())[:50]}"
    return None


def _only_reraises(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    """`except E: raise`: a handler whose whole body re-raises what it caught."""
    body = handler.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    statement = body[0].body[0]
    return isinstance(statement, cst.Raise) and statement.exc is None
