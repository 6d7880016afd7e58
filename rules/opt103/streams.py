"""Which stream is current where, as far as one function shows: `with` blocks that make another stream current,
the waits between streams, and a function that switches streams outright.

A non-blocking copy is queued on the stream current at the copy; a read on
that stream waits for it, a read on another stream does not, unless a
`wait_stream`, `wait_event` or `synchronize` lies between them.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule.python import PythonModule

from .function import Function
from .names import last_name
from .quoting import shorten

# `with X(...)` blocks that make another stream current (DeepSpeed's `get_accelerator().stream(s)` included).
_STREAM_CONTEXTS = frozenset({"stream", "StreamContext", "graph", "use_stream"})
_SYNCHRONISATIONS = frozenset({"wait_stream", "wait_event", "synchronize"})


def stream_block(module: PythonModule, node: cst.CSTNode, function: cst.FunctionDef) -> cst.With | None:
    """The innermost `with` in `function` whose body holds `node` and whose item makes another stream current."""
    child = node
    for ancestor in module.ancestors(node):
        if ancestor is function:
            return None
        if isinstance(ancestor, cst.With) and child is ancestor.body and any(_is_stream_item(i) for i in ancestor.items):
            return ancestor
        child = ancestor
    return None


def _is_stream_item(item: cst.WithItem) -> bool:
    return isinstance(item.item, cst.Call) and last_name(item.item.func) in _STREAM_CONTEXTS


def with_items(module: PythonModule, block: cst.With) -> str:
    return ", ".join(module.text(item.item) for item in block.items)


def synchronisation_between(module: PythonModule, function: Function, start: int, end: int) -> str | None:
    """The first wait between streams that starts in [start, end), quoted."""
    for call in function.calls:
        if last_name(call.func) in _SYNCHRONISATIONS and start <= module.span(call)[0] < end:
            return shorten(module.text(call))
    return None


def stream_switch(function: Function) -> cst.Call | None:
    return next((call for call in function.calls if last_name(call.func) == "set_stream"), None)
