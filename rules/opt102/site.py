"""What a site is: a torch factory (or host data) whose result is moved to a device, with what stands between.

The sources a site may start from, the `ast` test `needs` applies to a
move's receiver before libcst parses the file, and the `Site` the forms
(forms.py) find and every obligation reads.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from optpatch.rule.python import CallIndex, PythonModule, callee_name
from optpatch.analysis.torch_api import (
    CONSTANT_FACTORIES, DATA_FACTORIES, LEGACY_TENSOR_TYPES, LIKE_FACTORIES, RANDOM_FACTORIES, keyword_arg,
)
from optpatch.analysis.torch_values import ChainOp, Move

# Host data that is not a factory: a NumPy array's memory, and the legacy constructors' lists (`torch.LongTensor(ids)`).
HOST_DATA_CLASSES = frozenset({"torch.from_numpy", *LEGACY_TENSOR_TYPES})
ALL_SOURCES = CONSTANT_FACTORIES | LIKE_FACTORIES | RANDOM_FACTORIES | DATA_FACTORIES | HOST_DATA_CLASSES | {
    "torch.arange", "torch.linspace", "torch.logspace"}
# The last names of those, for the `ast` screen: a chain is a site only when it starts from one of them.
SOURCE_NAMES = frozenset(name.rsplit(".", 1)[1] for name in ALL_SOURCES)


def may_start_a_site(calls: CallIndex, call: ast.Call) -> bool:
    """`needs`' test for the receiver of a move (or the value assigned to `t` before `t = t.to(d)`)."""
    root, depth = call, 0
    while isinstance(root.func, ast.Attribute) and isinstance(root.func.value, ast.Call):
        root, depth = root.func.value, depth + 1
    if depth == 0:
        return calls.calls_torch(root) and not _a_class_of_no_source(root) or callee_name(root) == "pin_memory"
    return calls.calls_torch(root) and (isinstance(root.func, ast.Name) or callee_name(root) in SOURCE_NAMES)


def _a_class_of_no_source(call: ast.Call) -> bool:
    """`nn.Sequential(...)`, `torch.nn.Linear(...)`: a capitalised torch name spelled in full (no import alias hides
    it) that is none of the sources. `chained` and `two_statement` judge no such class (a module moved with `.cuda()`
    is the common case: test set-up), so nothing of the file needs parsing for it."""
    name = call.func.attr if type(call.func) is ast.Attribute else None
    return name is not None and name[:1].isupper() and name not in SOURCE_NAMES


@dataclass(frozen=True)
class Site:
    """A factory, the move of its result, and what stands between them."""

    factory: cst.Call  # the factory call, F(args)
    move_call: cst.Call  # `.to(...)` / `.cuda(...)`
    callee: str  # `torch.zeros`, `torch.from_numpy`, or a torch function that is no factory (`torch.cat`)
    move: Move
    second: cst.SimpleStatementLine | None = None  # `t = t.to(d)` in the two-statement form
    ops: tuple[ChainOp, ...] = ()  # the method calls between the factory and the move, innermost first


def like_template(site: Site) -> cst.BaseExpression | None:
    """The template tensor of a `*_like` factory."""
    if not site.callee.endswith("_like"):
        return None
    positional = [arg.value for arg in site.factory.args if arg.keyword is None and not arg.star]
    return positional[0] if positional else getattr(keyword_arg(site.factory, "input"), "value", None)


def op_text(module: PythonModule, op: ChainOp) -> str:
    """`.view(-1, 1)`: the method call as written, without its receiver."""
    start, _ = module.span(op.call.func.attr)
    _, end = module.span(op.call)
    return "." + module.source.text[start:end]
