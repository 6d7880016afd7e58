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
    """The calls of one module, by the last name of their callee (`a.b.to(...)` -> "to")."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self._by_name: dict[str, list[ast.Call]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = callee_name(node)
                if name is not None:
                    self._by_name.setdefault(name, []).append(node)

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


def callee_name(call: ast.Call) -> str | None:
    """The last name of a call's callee: "to" for `a.b.to(...)`, "zeros" for `zeros(...)`; None for `f()(...)`."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
