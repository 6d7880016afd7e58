"""The allocation's first use after its statement, on every path: a full write proves the fill wasted
(`fill_`, `zero_`, `copy_`, an element loop: safe; a kernel launch or an `*_out` op: validate); any other
first use keeps the site, with a `Kept` naming it.
"""

from __future__ import annotations

from optpatch.rule import KeepCategory, Kept, Tier
from optpatch.rule.cpp import LOOP_KINDS, CppUnit, CursorKind, Node, matching_bracket

from .allocation import WRAPPER_KINDS, Allocation, padded_size, references
from .element_loop import element_loop
from .kernel import ACCESSOR_METHODS, POINTER_METHODS, kernel_use, launch_of

# Host calls that write every element of the tensor they are called on (`copy_` broadcasts its source to
# the whole of it, or throws).
FULL_WRITES = frozenset({"fill_", "zero_", "copy_"})
# Statements and operators under which a use need not run whenever the statement around them does.
_BRANCH_KINDS = frozenset({
    CursorKind.IF_STMT, CursorKind.SWITCH_STMT, CursorKind.CASE_STMT, CursorKind.DEFAULT_STMT,
    CursorKind.CONDITIONAL_OPERATOR, CursorKind.CXX_TRY_STMT, CursorKind.CXX_CATCH_STMT,
})
_VIEWS = frozenset({
    "narrow", "slice", "select", "index", "index_put_", "view", "reshape", "transpose", "permute", "unsqueeze",
    "squeeze", "flatten", "chunk", "split", "unbind", "as_strided", "diagonal", "expand",
})
_METADATA = frozenset({
    "size", "sizes", "stride", "strides", "numel", "dim", "options", "dtype", "scalar_type", "device",
    "is_cuda", "is_contiguous", "element_size", "nbytes", "defined",
})


def first_use(unit: CppUnit, allocation: Allocation) -> Kept | tuple[Tier, list[str]]:
    """The tier and proof of a first use that writes every element, or why the site is kept."""
    uses = references(unit, allocation, allocation.statement.end, allocation.function.end)
    if not uses:
        return Kept(f"`{allocation.name}` is never used after the allocation", KeepCategory.DISCARDED)
    use = uses[0]
    line = unit.line_of(use.start)
    statement = _unconditional_statement(unit, use, allocation)
    tokens = unit.tokens
    index = unit.token_index(use.start)
    after = [t.spelling for t in tokens[index + 1 : index + 3]]
    method = after[1] if len(after) == 2 and after[0] in (".", "->") else ""
    launch = launch_of(unit, index)
    if launch is not None:
        return kernel_use(unit, allocation, use, launch, statement is not None)
    if statement is not None and method in FULL_WRITES and _is_statement_call(unit, index, statement):
        self_read = _self_read(unit, allocation, index, method)
        if self_read is not None:
            return self_read
        return Tier.SAFE, [f"L{line}: `{allocation.name}.{method}(...)` writes every element before any read"]
    if statement is not None and method in ("accessor", "data_ptr", "mutable_data_ptr"):
        proof = element_loop(unit, allocation, use, statement)
        if proof:
            return Tier.SAFE, proof
    op = out_op(unit, index)
    if op and statement is not None:
        padded = padded_size(unit, allocation.call)
        if padded is not None:
            return padded
        return Tier.VALIDATE, [f"L{line}: `{op}` writes its output `{allocation.name}`",
                               "an op's output is written in full only if it does not resize it: left to --validate"]
    return _blocking_use(unit, allocation, use, method, statement is not None)


def _unconditional_statement(unit: CppUnit, use: Node, allocation: Allocation) -> Node | None:
    """The statement of `allocation.block` that holds `use`, when `use` runs whenever that statement does:
    nested only in expressions, plain blocks and the lambda handed to an `AT_DISPATCH_*` macro (whose
    expansion, a switch over dtypes, runs it once or throws); None otherwise."""
    dispatch = _dispatch_around(unit, use)
    in_dispatched_lambda = False
    node = use
    while node.parent is not None and node.parent is not allocation.block:
        parent = node.parent
        if in_dispatched_lambda and dispatch.start <= parent.start and parent.end <= dispatch.end:
            node = parent  # the macro's own expansion around the lambda
            continue
        if parent.kind is CursorKind.LAMBDA_EXPR:
            if dispatch is None or parent.start <= dispatch.start or parent.end > dispatch.end:
                return None
            in_dispatched_lambda = True
        elif parent.kind in _BRANCH_KINDS or parent.kind in LOOP_KINDS:
            return None
        elif parent.kind is CursorKind.BINARY_OPERATOR and parent.spelling in ("&&", "||"):
            return None
        node = parent
    return node if node.parent is allocation.block else None


DISPATCH_MARK = "DISPATCH"  # in the name of ATen's AT_DISPATCH_* macros and of projects' own


def _dispatch_around(unit: CppUnit, use: Node) -> Node | None:
    """The innermost `AT_DISPATCH_*` (or a project's `*DISPATCH*`) macro call around `use`."""
    around = [n for n in unit.macro_uses if DISPATCH_MARK in n.spelling and n.start <= use.start < n.end]
    return max(around, key=lambda n: n.start) if around else None


def _is_statement_call(unit: CppUnit, index: int, statement: Node) -> bool:
    """`name.method(...)` makes up the whole statement (possibly chained on: `out.zero_().add_(x)` runs zero_ first)."""
    return unit.tokens[index].start == statement.start


def _self_read(unit: CppUnit, allocation: Allocation, index: int, method: str) -> Kept | None:
    """`out.copy_(f(out))`: the full write's own argument reads the zeros."""
    tokens = unit.tokens
    close = matching_bracket(tokens, index + 3)
    if close is None:
        return Kept(f"`{allocation.name}.{method}(` does not close", KeepCategory.UNRESOLVED)
    if any(t.spelling == allocation.name for t in tokens[index + 4 : close]):
        return Kept(f"L{unit.line_of(tokens[index].start)}: `{allocation.name}.{method}` reads `{allocation.name}` "
                    "in its own argument", KeepCategory.READ_BEFORE_WRITE)
    return None


def out_op(unit: CppUnit, index: int) -> str:
    """`at::mm_out(out, a, b)` / `torch::add_out(out, ...)`: the op, when the reference is its first argument."""
    tokens = unit.tokens
    if index < 4 or tokens[index - 1].spelling != "(" or tokens[index + 1].spelling not in (",", ")"):
        return ""
    name, scope = tokens[index - 2], tokens[index - 4].spelling if tokens[index - 3].spelling == "::" else ""
    if name.spelling.endswith("_out") and scope in ("at", "torch"):
        return f"{scope}::{name.spelling}"
    return ""


def _blocking_use(unit: CppUnit, allocation: Allocation, use: Node, method: str, unconditional: bool) -> Kept:
    line, name = unit.line_of(use.start), allocation.name
    where = f"L{line}: `{name}`"
    parent = use.parent
    while parent is not None and parent.kind in WRAPPER_KINDS and (
            parent.start, parent.end) == (use.start, use.end):
        parent = parent.parent
    if parent is not None and parent.kind is CursorKind.RETURN_STMT:
        return Kept(f"{where} is returned before anything writes it (an early return for an empty input?): the "
                    "caller reads the zeros", KeepCategory.RETURNED)
    if not unconditional:
        return Kept(f"{where} is first used on a path that may not run (a branch, a loop, a lambda): elsewhere "
                    "it is read as zeros", KeepCategory.CONDITION)
    call = f"L{line}: `{name}.{method}(...)`"
    if method in _VIEWS:
        return Kept(f"{call} takes a part of it: the rest keeps its zeros", KeepCategory.VIEW_TAKEN)
    if method in ACCESSOR_METHODS or method in POINTER_METHODS and _declares(unit, use):
        return Kept(f"{call} reaches its elements, but no loop right after it writes every index first "
                    "(only a 1-D loop from 0 below its size, writing as its first statement, is proven)",
                    KeepCategory.PARTIAL_WRITE)
    if method in POINTER_METHODS:
        return Kept(f"{call} is stored or passed on: its users are not followed", KeepCategory.STORED)
    if method and method not in _METADATA:
        return Kept(f"{call} may read the zeros", KeepCategory.READ_BEFORE_WRITE)
    if method:
        return Kept(f"{call} comes first: only the first use is examined", KeepCategory.OTHER)
    return Kept(f"{where} is passed on or read: what reads it is not followed", KeepCategory.PASSED)


def _declares(unit: CppUnit, use: Node) -> bool:
    """`T* p = out.data_ptr<T>();`: the use initialises a local."""
    return any(
        a.kind is CursorKind.VAR_DECL for a in use.ancestors()
        if a.kind not in (CursorKind.DECL_STMT, CursorKind.COMPOUND_STMT)
    )
