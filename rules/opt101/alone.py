"""The sites whose verdict the screen's `ast` settles alone, so that the outline may stub their functions.

A result passed, returned, stored elsewhere, discarded or used at once is
kept (or, discarded, advised on) whatever its function holds: `needs` leaves
such functions out, and `check` judges their sites from the `ast`, with the
same verdict, place and context that libcst's tree of the whole module gives
(tests/python/test_python_outline.py holds the two to the same findings).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from optpatch.analysis.overwrite import CHAINED_FULL_WRITES
from optpatch.rule import Advice, KeepCategory, Kept
from optpatch.rule.python import CallIndex, PythonModule, ast_dotted_name, callee_name

from .allocation import METHODS
from .conclusions import unread
from .site import ANOTHER_OBJECT, DISCARDED, FILLS_OUT, IN_AN_EXPRESSION, PASSED, RETURNED, SEVERAL_NAMES, UNPACKED, USED_THROUGH


class SettlingUse(NamedTuple):
    """The use of an allocation's result that settles its verdict: one of site.py's uses, the callee it is passed to,
    and the allocation's ancestors up to its outermost function (its context)."""

    reason: str  # with `{}` for the callee's text when `callee` is set
    category: KeepCategory
    callee: ast.expr | None
    ancestors: list[ast.AST]

    def verdict(self, module: PythonModule) -> Kept | Advice:
        """The keep this use means; advice for a discarded result."""
        reason = self.reason.format(module.ast_text(self.callee) if self.callee else "")
        if self.category is KeepCategory.DISCARDED:
            return unread(reason)
        return Kept(reason, self.category)


_EXCEPTION_BLOCKS = (ast.With, ast.AsyncWith, ast.Try, ast.TryStar)


def judged_alone(calls: CallIndex, call: ast.Call) -> SettlingUse | None:
    """The use that settles this allocation's verdict, when the call and its parents show it; else None.

    The verdict needs nothing else of its function when the result is not
    bound to one local name or to `self.<name>` (those need the proof, or
    the class): it is passed, returned, stored elsewhere, discarded or used
    at once. Whether the call is torch's at all is then a question for the
    module's bindings alone, provided nothing inside its function binds the
    callee's name (`allocation_kind_alone`); a `new_zeros` receiver must
    name no import anywhere. Module- and class-level sites, star imports
    with a bare name, shapes with no simple `ast` counterpart (a decorator,
    a class's bases), discarded results inside a `with` or `try` (which may
    expect the exception, `expecting_block`) and arguments of a
    `Parameter(...)` (which `allocated_value` follows) are left to
    libcst's tree. Other sites inside those blocks are keeps whatever the
    block: only a fix or advice turns into an exception-check keep.
    """
    function = calls.outermost_function(call)
    if function is None:
        return None
    func = call.func
    if type(func) is ast.Attribute and func.attr in METHODS:
        root = _receiver_root(func.value)
        if root is not None and root in calls.imported_names:
            return None
    else:
        spelled = ast_dotted_name(func)
        if spelled is None or calls.binds_anywhere(function, spelled.partition(".")[0]):
            return None
        if type(func) is ast.Name and calls.star_import:
            return None
    ancestors = calls.ancestors(call, function)
    if any(type(node) is ast.Call and callee_name(node) in ("TypeVar", "NewType") for node in ancestors):
        return None  # python_scope gives the first argument of these no meaning
    if any(keyword.arg == "out" for keyword in call.keywords):
        return SettlingUse(*FILLS_OUT, None, ancestors)
    result, at = call, 0  # `moved_result`: `torch.zeros(n).cuda()` is as fresh as the zeros
    while (type(ancestors[at]) is ast.Attribute and ancestors[at].attr in ("to", "cuda")
           and type(ancestors[at + 1]) is ast.Call and ancestors[at + 1].func is ancestors[at]):
        result, at = ancestors[at + 1], at + 2
    parent = ancestors[at]
    owner = ancestors[at + 1] if at + 1 < len(ancestors) else None
    kind = type(parent)
    if kind is ast.Call and callee_name(parent) == "Parameter" or kind is ast.keyword and type(owner) is ast.Call \
            and callee_name(owner) == "Parameter":
        return None
    if kind is ast.Expr:
        # Advice, unless a `with` or `try` around it expects its exception (`expecting_block`, on libcst's tree).
        return None if any(type(node) in _EXCEPTION_BLOCKS for node in ancestors) else SettlingUse(*DISCARDED, None, ancestors)
    if kind is ast.Assign and parent.value is result:
        if len(parent.targets) > 1:
            return SettlingUse(*SEVERAL_NAMES, None, ancestors)
        target = parent.targets[0]
        if type(target) is ast.Name:
            return None
        if type(target) is ast.Attribute:
            return None if type(target.value) is ast.Name and target.value.id == "self" else SettlingUse(*ANOTHER_OBJECT, None, ancestors)
        return SettlingUse(*UNPACKED, None, ancestors)
    if kind is ast.Return:
        return SettlingUse(*RETURNED, None, ancestors)
    if kind is ast.Call and any(argument is result for argument in parent.args):
        return SettlingUse(*PASSED, parent.func, ancestors)
    if kind is ast.keyword or kind is ast.Starred and type(owner) is ast.Call and any(a is parent for a in owner.args):
        return SettlingUse(*PASSED, owner.func, ancestors) if type(owner) is ast.Call else None  # a class's keywords: no Call
    if kind is ast.Attribute:
        if parent.attr in CHAINED_FULL_WRITES and type(owner) is ast.Call and owner.func is parent:
            return None  # `torch.zeros(n).fill_(v)`: `prove_chained_overwrite`
        return SettlingUse(USED_THROUGH[0].format(parent.attr), USED_THROUGH[1], None, ancestors)
    if kind is ast.ListComp and parent.elt is result and type(owner) is ast.Assign and len(owner.targets) == 1 \
            and type(owner.targets[0]) is ast.Name:
        return None  # every tensor in a list bound to a name: `examine_elements`
    if kind in (ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) or type(owner) is ast.ClassDef:
        return None
    return SettlingUse(*IN_AN_EXPRESSION, None, ancestors)


def _receiver_root(node: ast.expr) -> str | None:
    """The name python_scope would resolve for a receiver (`x` in `x.a[0].f()`), or None if it has none."""
    while True:
        kind = type(node)
        if kind is ast.Name:
            return node.id
        if kind is ast.Attribute or kind is ast.Subscript:
            node = node.value
        elif kind is ast.Call:
            node = node.func
        else:
            return None
