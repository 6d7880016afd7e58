"""Copies whose rewrite buys nothing: kept (or, for a dead store, advice), though every safety obligation holds.

- The host waits for the GPU after the copy anyway, in the same function,
  loop body and stream (`.item()`, `.tolist()`, `synchronize()`, or the
  result read as a Python value): the stall only moves there.
- The host reads the copy back in its own statement, or the copy is a tiny
  literal constant in a test (optpatch.analysis.no_gain, shared with other
  rules).
- The result is assigned again before anything reads it: advice to delete
  the line, not a fix.
"""

from __future__ import annotations

import libcst as cst

from optpatch.analysis.no_gain import literal_elements, read_back_at_once, rebound_before_read
from optpatch.rule import Advice, CodeArea, KeepCategory, Kept
from optpatch.rule.python import LOOP_NODES, SCOPE_NODES, PythonModule, walk

from .host_data import data_argument
from .quoting import shorten
from .readers import Readers
from .site import Site
from .streams import stream_block

DEAD_STORE_BASIS = "a value assigned again before any read: nothing runs faster for rewriting it"
# A literal constant of at most this many numbers, in a test, is not worth an edit (16 elements: 17 -> 14 us idle).
TINY_TEST_CONSTANT = 16
# Calls after which the host has waited for the work queued on the current stream.
_HOST_WAITS = frozenset({"item", "tolist", "cpu", "numpy", "synchronize"})
_HOST_CONVERSIONS = frozenset({"float", "int", "bool", "str", "repr", "print", "format"})


def no_gain(module: PythonModule, site: Site, readers: Readers | None) -> Kept | None:
    """Why making this copy asynchronous gains nothing, or None."""
    return _host_wait_after(module, site, readers) or _read_back_or_tiny(module, site)


def dead_store(module: PythonModule, site: Site) -> Advice | None:
    """Advice to delete a copy whose result is assigned again before any read."""
    rebound = rebound_before_read(module, site.copy)
    if rebound is None:
        return None
    return Advice(rebound.advice("the copy"), DEAD_STORE_BASIS, category=KeepCategory.DEAD_STORE)


def _host_wait_after(module: PythonModule, site: Site, readers: Readers | None) -> Kept | None:
    """A wait for the GPU on the host after the copy, in the same function, loop body and stream: the stall moves there.

    `torch.tensor([flag], device="cuda")`, an all-reduce, then `.item()` is the usual shape: the host waits for
    all queued work at `.item()` whatever the copy does, so making the copy asynchronous buys nothing. A wait is
    `.item()`, `.tolist()`, `.cpu()`, `.numpy()` or `synchronize()` on anything, or the result (or a name it is
    bound to) read as a Python value: formatted in an f-string, converted by `float()`, `int()`, `bool()`,
    `str()`, `print()`, or tested by `if`, `while`, `assert`.
    """
    if site.function is None or readers is None:
        return None
    function = site.function.node
    copy_end = module.span(site.copy)[1]
    stream, loop = stream_block(module, site.copy, function), _innermost_loop(module, site.copy, function)
    for node in site.function.may_wait:
        if module.span(node)[1] <= copy_end:
            continue
        wait = _host_wait(module, node, readers.names)
        if wait is None or module.span(wait)[0] < copy_end or module.enclosing(wait, SCOPE_NODES) is not function:
            continue
        if stream_block(module, wait, function) is stream and _innermost_loop(module, wait, function) is loop:
            return Kept(f"L{module.start(wait)[0]}: `{shorten(module.text(wait))}` waits for the GPU on the host in "
                        "this function anyway: the stall only moves there, nothing to gain", KeepCategory.NO_GAIN)
    return None


def _read_back_or_tiny(module: PythonModule, site: Site) -> Kept | None:
    """A copy the host reads back in its own statement, or a tiny literal constant in a test: nothing to gain."""
    read = read_back_at_once(module, site.copy)
    if read is not None:
        return Kept(f"{read} in the same statement: the host waits for the GPU there anyway, so the stall only "
                    "moves; nothing to gain", KeepCategory.NO_GAIN)
    data = data_argument(site.source.call) if site.source.callee == "torch.tensor" else None
    elements = literal_elements(data) if data is not None and module.source.area is CodeArea.TESTS else None
    if elements is not None and elements <= TINY_TEST_CONSTANT:
        return Kept(f"a literal constant of {elements} number(s) in a test: a copy that small, made once per test, "
                    "gains nothing measurable", KeepCategory.NO_GAIN)
    return None


def _host_wait(module: PythonModule, node: cst.CSTNode, names: set[str]) -> cst.CSTNode | None:
    """The part of `node` that makes the host wait for the GPU, if it does."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _HOST_WAITS:
        return node.func.attr
    if not names:
        return None
    if isinstance(node, cst.FormattedStringExpression) and _mentions_any(module, node.expression, names):
        return node.expression
    if isinstance(node, (cst.If, cst.While, cst.Assert)) and _mentions_any(module, node.test, names):
        return node.test
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _HOST_CONVERSIONS:
        if any(_mentions_any(module, arg.value, names) for arg in node.args) and \
                module.qualified_names(node.func) == {f"builtins.{node.func.value}"}:
            return node
    return None


def _mentions_any(module: PythonModule, node: cst.CSTNode, names: set[str]) -> bool:
    for found in walk(node):
        if isinstance(found, cst.Name) and found.value in names:
            parent = module.parent(found)
            if not (isinstance(parent, cst.Attribute) and parent.attr is found):
                return True
    return False


def _innermost_loop(module: PythonModule, node: cst.CSTNode, function: cst.FunctionDef) -> cst.CSTNode | None:
    for ancestor in module.ancestors(node):
        if ancestor is function:
            return None
        if isinstance(ancestor, LOOP_NODES):
            return ancestor
    return None
