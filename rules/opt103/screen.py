"""The copies `check` judges, found on the screen's `ast` before libcst parses the file (`Rule.needs`).

A copy is `<call>(...).to(...)` / `.cuda(...)` whose inner call may build a
source (source.py), `t.to(...)` where the same function assigns `t` such a
call, `tensor(..., device=d)` through an import of torch for any `d` but a
literal host, and a legacy CUDA constructor. The screen may accept a file
`check` finds nothing in, never the reverse.
"""

from __future__ import annotations

import ast

from optpatch.rule.python import CallIndex, ast_dotted_name, callee_name, called_functions

from .source import CHAINED_CONSTRUCTORS, LEGACY_NAMES, NAMED_CONSTRUCTORS


def copies(calls: CallIndex) -> list[ast.AST]:
    """The copies `check` judges, and the module-level functions their arguments call (see `Rule.needs`)."""
    found: list[ast.AST] = []
    for move in calls.named("to", "cuda"):
        if not isinstance(move.func, ast.Attribute):
            continue
        receiver = move.func.value
        if isinstance(receiver, ast.Call):
            if _may_construct(calls, receiver, CHAINED_CONSTRUCTORS):
                found.append(move)
        elif isinstance(receiver, ast.Name):
            sources = [source for source in calls.calls_assigned(receiver.id)
                       if _may_construct(calls, source, NAMED_CONSTRUCTORS)]
            if sources and _in_the_same_function(calls, move, sources):
                found.append(move)
    for call in calls.named("tensor"):
        device = next((keyword.value for keyword in call.keywords if keyword.arg == "device"), None)
        if device is not None and calls.calls_torch(call) and not _names_the_host(device):
            found.append(call)
    for call in calls.named(*LEGACY_NAMES):
        if calls.calls_torch(call) and (ast_dotted_name(call.func) or "").rpartition(".")[0].endswith("cuda"):
            found.append(call)
    arguments = [a for call in found for a in (*call.args, *(keyword.value for keyword in call.keywords))]
    return found + called_functions(calls.tree, arguments)


def _may_construct(calls: CallIndex, call: ast.Call, names: frozenset[str]) -> bool:
    """`x.pin_memory()`, or a torch function of one of these names (through any import of torch)."""
    name = callee_name(call)
    return name == "pin_memory" or (name in names and calls.calls_torch(call))


def _in_the_same_function(calls: CallIndex, move: ast.Call, sources: list[ast.Call]) -> bool:
    """Whether one of `sources` lies in the outermost function holding `move` (`check` wants the binding there)."""
    function = calls.outermost_function(move)
    if function is None:
        return False
    first = min((d.lineno for d in function.decorator_list), default=function.lineno)
    return any(first <= source.lineno <= function.end_lineno for source in sources)


def _names_the_host(device: ast.expr) -> bool:
    """`device="cpu"` or `device=None`, spelled as a literal: nothing moves."""
    return isinstance(device, ast.Constant) and (device.value is None or device.value == "cpu")
