from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from optpatch.rule import Context, Edit, Example, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier
from optpatch.rule.cpp import (
    FUNCTION_KINDS, LOOP_KINDS, CppUnit, Node, Place, Token, kernel_name, matching_bracket, split_top_level,
)

# The factory each zero-filling factory becomes: same arguments, same result but for the values.
_EMPTY_OF = {"zeros": "empty", "zeros_like": "empty_like"}
_MENTION = re.compile(r"\bzeros(?:_like)?\b")
# Host calls that write every element of the tensor they are called on (`copy_` broadcasts its source to
# the whole of it, or throws).
_FULL_WRITES = frozenset({"fill_", "zero_", "copy_"})
_POINTER_METHODS = frozenset({"data_ptr", "mutable_data_ptr", "data"})
_ACCESSOR_METHODS = frozenset({"accessor", "packed_accessor32", "packed_accessor64", "packed_accessor"})
_KERNEL_ARGUMENT_METHODS = _POINTER_METHODS | _ACCESSOR_METHODS
_COMPOUND_ASSIGNMENTS = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_ASSIGNMENTS = _COMPOUND_ASSIGNMENTS | {"="}
_ATOMICS = re.compile(r"^atomic[A-Z]\w*$")
# A size spelled this way rounds up or pads: a kernel sized by the data may leave the tail unwritten.
_PADDING_WORDS = re.compile(r"pad|round|align|ceil|div_up|divup|cdiv", re.I)
_VIEWS = frozenset({
    "narrow", "slice", "select", "index", "index_put_", "view", "reshape", "transpose", "permute", "unsqueeze",
    "squeeze", "flatten", "chunk", "split", "unbind", "as_strided", "diagonal", "expand",
})
_METADATA = frozenset({
    "size", "sizes", "stride", "strides", "numel", "dim", "options", "dtype", "scalar_type", "device",
    "is_cuda", "is_contiguous", "element_size", "nbytes", "defined",
})

IMPACT_BASIS = (
    "RULES.md, measured on one H100 (torch 2.11, CUDA 13.0): torch.zeros -> torch.empty on cuda saves ~6-10 us of "
    "host time (one fill launch) plus the memset: ~4 us up to 1 MiB, 25 us at 64 MiB, 328 us at 1 GiB"
)
ONCE_BASIS = "one-time allocation: the fill (a launch and a memset) is paid once, not per step"


@dataclass(frozen=True)
class Allocation:
    """`T out = torch::zeros(...);` or `out = at::zeros_like(...);`: the call, the name and the statement."""

    call: Node
    name: str
    target: object  # the variable's cindex cursor
    statement: Node  # the declaration or assignment statement, a direct child of `block`
    block: Node  # the compound statement it sits in
    function: Node  # the outermost host function around it


class ZerosToEmptyCpp(Rule):
    """
    Replace `torch::zeros` / `at::zeros` / `zeros_like` with `empty` in C++/CUDA host code when every element is written before any read.

    ## What it does
    Finds `torch::zeros(sizes, options)`, `at::zeros(...)`,
    `torch::zeros_like(t, ...)` and `at::zeros_like(...)` in host code whose
    result initialises a local (`auto out = at::zeros(...);`) or is assigned
    to one (`out = at::zeros(...);`), follows the variable to its first use
    after that statement, and rewrites the factory to `empty` /
    `empty_like` (same arguments) when that first use writes every element:

    - `out.fill_(v)`, `out.zero_()` or `out.copy_(src)` (`copy_` broadcasts
      `src` to all of `out`, or throws), with `src` not mentioning `out`:
      **safe**;
    - `auto a = out.accessor<T, 1>();` or `T* p = out.data_ptr<T>();`
      followed at once by `for (i = 0; i < N; ++i) { a[i] = ...; ... }`
      where `N` is `out.numel()`, `out.size(0)` or the allocation's one
      size, unchanged, the write is the loop's first statement, its value
      does not read `out`, and the body never changes `i`: **safe**;
    - a kernel launch `k<<<...>>>(..., out.data_ptr<T>(), ...)` (or a packed
      accessor), or a torch `*_out` op given `out` as its output:
      **validate**.

    The first use counts only where it runs whenever the allocation does:
    in the same block, or inside an `AT_DISPATCH_*` lambda there (it runs
    once, or throws).

    ## Why is this bad
    `zeros` is `empty` plus a fill: on a GPU a kernel launch (6-10 us of
    host time) and a memset over the whole tensor, paid on every call. When
    the next thing that happens to the tensor is a full overwrite, the fill
    is wasted.

    ## Example
    ```cpp
    torch::Tensor out = torch::zeros({n, d}, x.options());
    scale_kernel<<<blocks, threads, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<float>(), n * d);
    ```

    ## Use instead
    ```cpp
    torch::Tensor out = torch::empty({n, d}, x.options());
    scale_kernel<<<blocks, threads, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<float>(), n * d);
    ```

    ## Fix safety
    `safe` only where host code provably writes every element before any
    read: a `fill_`, `zero_` or `copy_` of the whole tensor, or a 1-D
    element loop over every index, as its first use, on every path.

    `validate` where the first use is a kernel launch or a `*_out` op:
    whether the kernel's grid covers every element cannot be proven from
    the text. `--validate` applies the fix only with `--build`, which
    rebuilds the extension and runs the project's tests with torch's
    uninitialised-memory poisoning (`fill_uninitialized_memory`), which
    fills `at::empty` called from C++ too (docs/validation.md, "Poisoned
    memory in C++ extensions"): an element the kernel leaves unwritten is
    NaN there, not 0.

    When the kernel is defined in the same file, its body is read, and the
    site is **kept** when the kernel:
    - accumulates into the output (`atomicAdd` and the other `atomic*`
      functions, `out[i] += ...`, `out[i]++`): it reads the zeros;
    - reads the output (`out[i]` other than as an assignment's target);
    - hands the output pointer on (to a device function, pointer arithmetic):
      its writes are not seen;
    - returns early other than by a leading guard `if (...) return;`, or
      guards its threads by a parameter whose launch argument is not a size
      of the output (the grid may not cover it).

    Also kept: an allocation returned, stored, passed to any other call,
    viewed or sliced, read, or first used on a path that may not run (an
    `if`, a loop, a lambda) before it is written, including the early
    return of an empty input (`if (x.numel() == 0) return out;`); a size
    spelled with padding or rounding words (`pad`, `round`, `align`,
    `ceil`, `cdiv`): a kernel sized by the data may leave the padding
    unwritten for a caller to read; an allocation never used; device code.

    ## Known problems
    Only the first use is examined: a multi-dimensional element loop, or a
    tensor filled through several calls (`narrow(...).copy_` for each part),
    is kept. A kernel defined in another file is not read, so its
    accumulations are left to `--validate` to catch (a test that runs it
    sees NaN where it added to the zeros). A data pointer stored in a
    parameter struct for a launcher in another file (`params.out_ptr =
    out.data_ptr();`, as causal-conv1d and flash-attention do) is kept:
    optpatch does not follow it (docs/field.md, "OPT203 on real code").
    A `zeros` call that does not parse without the project's
    headers is reported, not analysed.

    ## Measured impact
    From RULES.md (one H100, torch 2.11, CUDA 13.0): `zeros` -> `empty` on
    a CUDA device saves ~6-10 us of host time per call (the fill's launch)
    plus the memset: ~4 us up to 1 MiB, 25 us at 64 MiB, 328 us at 1 GiB
    (3.27 TB/s). FBGEMM #6257 (a pack kernel that writes every element):
    +16.8-28.3% on MI350X. The bundled kernels' `gather_cache_flash`
    allocates its output this way; `optpatch validate` applies this rule's
    fix there through `--validate --build` and times both builds on a GPU
    (kernels/README.md, docs/benchmarks.md).

    ## References
    - https://pytorch.org/cppdocs/notes/tensor_creation.html
    - https://pytorch.org/docs/stable/generated/torch.utils.deterministic.fill_uninitialized_memory.html
    - FBGEMM #6257, fvdb-core #212 (outputs written before read); FBGEMM #5754 (an unwritten tail)
    """

    code = "OPT203"
    name = "zeros-to-empty-cpp"
    summary = "torch::zeros / at::zeros / zeros_like -> empty where every element is written before any read"
    language = "cpp"
    default_tier = "safe"
    version = 1
    tags = ("performance", "cuda", "c++", "memory")
    trigger_words = ("zeros",)

    VALID = [
        # Accumulated into by its first use.
        "void f(torch::Tensor x) {\n  auto out = torch::zeros_like(x);\n  out.add_(x);\n}\n",
        # Returned before anything writes it: the caller reads the zeros.
        "torch::Tensor f(int n) {\n  return torch::zeros({n}, torch::kFloat);\n}\n",
        # Written only on one path.
        "void f(torch::Tensor x, bool b) {\n  auto out = torch::zeros({4}, torch::kFloat);\n"
        "  if (b) out.fill_(1);\n  x.copy_(out);\n}\n",
    ]
    INVALID = [
        Example(
            "void f(torch::Tensor x) {\n  auto out = torch::zeros_like(x);\n  out.copy_(x);\n}\n",
            "void f(torch::Tensor x) {\n  auto out = torch::empty_like(x);\n  out.copy_(x);\n}\n",
        ),
        Example(
            "torch::Tensor f(int n) {\n  torch::Tensor out = at::zeros({n, 2}, torch::kFloat);\n"
            "  out.fill_(0.5);\n  return out;\n}\n",
            "torch::Tensor f(int n) {\n  torch::Tensor out = at::empty({n, 2}, torch::kFloat);\n"
            "  out.fill_(0.5);\n  return out;\n}\n",
        ),
    ]

    def check(self, unit: CppUnit) -> Iterator[Judgement]:
        if not _MENTION.search(unit.source.text):
            return
        analysed: set[int] = set()
        for node in unit.nodes:
            if node.kind == "CALL_EXPR" and node.spelling in _EMPTY_OF and _is_torch_factory(unit, node):
                analysed.update(t.start for t in unit.tokens_in(node.start, node.end) if t.spelling == node.spelling)
                yield self._examine(unit, node)
        yield from self._unparsed(unit, analysed)

    def _examine(self, unit: CppUnit, call: Node) -> Judgement:
        where = unit.where(call)
        context = unit.run_context(call, where.function)
        at = unit.position(call.start)
        if where.place is not Place.HOST:
            category = KeepCategory.DEVICE_CODE if where.place is Place.DEVICE else KeepCategory.UNRESOLVED
            return Judgement(at, context, Kept(f"not host code: {where.reason}", category))
        allocation = _allocation(unit, call)
        if isinstance(allocation, Kept):
            return Judgement(at, context, allocation)
        first_use = _first_use(unit, allocation)
        if isinstance(first_use, Kept):
            return Judgement(at, context, first_use)
        tier, proof = first_use
        name = _callee_token(unit, call)
        edit = Edit(name.start, name.end, _EMPTY_OF[call.spelling])
        impact, basis = {
            Context.ONCE: (Impact.LOW, ONCE_BASIS), Context.HOT: (Impact.HIGH, IMPACT_BASIS),
        }.get(context, (Impact.MEDIUM, IMPACT_BASIS))
        replacement = unit.text(call.start, name.start) + _EMPTY_OF[call.spelling] + unit.text(name.end, call.end)
        return Judgement(at, context, Proven("; ".join(proof), tier, (edit,), impact, basis, " ".join(replacement.split()),
                                             tuple(proof)))

    def _unparsed(self, unit: CppUnit, analysed: set[int]) -> Iterator[Judgement]:
        """`torch::zeros(` / `at::zeros_like(` that did not resolve to torch's factory: reported, never rewritten."""
        tokens = unit.tokens
        for index, token in enumerate(tokens):
            if token.spelling not in _EMPTY_OF or token.start in analysed or index < 2 or index + 1 >= len(tokens):
                continue
            if tokens[index - 1].spelling != "::" or tokens[index - 2].spelling not in ("torch", "at"):
                continue
            if tokens[index + 1].spelling != "(" or unit.in_device_function(token.start):
                continue
            without = "" if unit.with_headers else " without the project's headers"
            reason = f"this statement does not parse{without} (unknown types in it); not analysed"
            yield Judgement(unit.position(tokens[index - 2].start), Context.CALL, Kept(reason, KeepCategory.UNRESOLVED))


# -- the allocation -------------------------------------------------------------------------------


def _is_torch_factory(unit: CppUnit, call: Node) -> bool:
    callee = unit.referenced(call)
    return callee is not None and callee.kind.name == "FUNCTION_DECL" and unit.declared_by_library(callee, ("at", "torch"))


def _callee_token(unit: CppUnit, call: Node) -> Token:
    return next(t for t in unit.tokens_in(call.start, call.end) if t.spelling == call.spelling)


def _outer(node: Node) -> Node:
    """The expression `node` is, through implicit conversions and copies that keep its extent."""
    while node.parent is not None and node.parent.kind in ("UNEXPOSED_EXPR", "CALL_EXPR", "PAREN_EXPR") and (
        node.parent.start, node.parent.end) == (node.start, node.end):
        node = node.parent
    return node


def _allocation(unit: CppUnit, call: Node) -> Kept | Allocation:
    """The local that holds the call's tensor, or why the site is kept (how it is held, a loop-carried use)."""
    expression = _outer(call)
    parent = expression.parent
    if parent is not None and parent.kind == "VAR_DECL":
        statement = parent.parent
        if statement is None or statement.kind != "DECL_STMT" or len(statement.children) != 1:
            return Kept("declared with other variables in one statement", KeepCategory.CANNOT_SPELL)
        if parent.type_kind in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
            return Kept("bound to a reference", KeepCategory.OTHER)
        name, target = parent.spelling, parent.cursor
    elif parent is not None and parent.kind in ("BINARY_OPERATOR", "CALL_EXPR") and _assigned_to(unit, parent, expression):
        statement = _outer(parent)
        first = unit.tokens_in(parent.start, parent.end)[0]
        left = next((c for c in parent.walk() if c.kind == "DECL_REF_EXPR" and c.start == first.start), None)
        name, target = first.spelling, unit.referenced(left) if left is not None else None
        if target is None or target.kind.name != "VAR_DECL":  # a parameter, a member (`MEMBER_REF_EXPR`)
            return Kept("assigned to something other than a local variable", KeepCategory.STORED)
    else:
        return _direct_use(unit, expression)
    block = statement.parent
    if block is None or block.kind != "COMPOUND_STMT":
        return Kept("the allocation is not a statement of a block", KeepCategory.CANNOT_SPELL)
    functions = [a for a in call.ancestors() if a.kind in FUNCTION_KINDS and a.kind != "LAMBDA_EXPR"]
    if not functions:
        return Kept("not inside a function", KeepCategory.UNRESOLVED)
    allocation = Allocation(call, name, target, statement, block, functions[-1])
    carried = _loop_carried_use(unit, allocation)
    return allocation if carried is None else carried


def _assigned_to(unit: CppUnit, operator: Node, expression: Node) -> bool:
    """`name = zeros(...)` as a statement of its own: a built-in `=` or Tensor's `operator=` call."""
    statement = _outer(operator)
    if statement.parent is None or statement.parent.kind != "COMPOUND_STMT":
        return False
    tokens = unit.tokens_in(operator.start, expression.start)
    return [t.spelling for t in tokens][1:] == ["="] and tokens[0].kind == "identifier"


def _direct_use(unit: CppUnit, expression: Node) -> Kept:
    parent = expression.parent
    while parent is not None and parent.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
        parent = parent.parent
    if parent is not None and parent.kind == "RETURN_STMT":
        return Kept("returned: the caller may read elements nothing here writes", KeepCategory.RETURNED)
    if parent is not None and parent.kind in ("CALL_EXPR", "MEMBER_REF_EXPR"):
        return Kept("used at once in an expression, not held by a local: its readers are not followed", KeepCategory.PASSED)
    return Kept("not held by a local variable: its readers are not followed", KeepCategory.OTHER)


def _loop_carried_use(unit: CppUnit, allocation: Allocation) -> Kept | None:
    """In a loop, a use written before the allocation reads the previous iteration's tensor on the next."""
    for loop in allocation.statement.ancestors():
        if loop is allocation.function:
            return None
        if loop.kind in LOOP_KINDS and any(
            r.start < allocation.statement.start for r in _references(unit, allocation, loop.start, loop.end)
        ):
            return Kept(f"in a loop, `{allocation.name}` is used before this allocation: the next iteration may read "
                        "the zeros", KeepCategory.LOOP)
    return None


def _padded_size(unit: CppUnit, call: Node) -> Kept | None:
    """A padded size, for a use that may write only the data's part (a kernel, an op)."""
    arguments = call.arguments()
    if call.spelling == "zeros" and arguments:
        sizes = unit.node_text(arguments[0])
        padded = _PADDING_WORDS.search(sizes)
        if padded:
            return Kept(f"the size `{' '.join(sizes.split())}` is padded or rounded (`{padded.group(0)}`): a kernel "
                        "sized by the data may leave the padding unwritten for a caller to read", KeepCategory.PADDED)
    return None


def _references(unit: CppUnit, allocation: Allocation, start: int, end: int) -> list[Node]:
    return [
        n for n in unit.nodes
        if n.kind in ("DECL_REF_EXPR", "VARIABLE_REF") and n.spelling == allocation.name and start <= n.start < end
        and unit.referenced(n) == allocation.target
    ]


# -- the first use ----------------------------------------------------------------------------------


def _first_use(unit: CppUnit, allocation: Allocation) -> Kept | tuple[Tier, list[str]]:
    """The tier and proof of a first use that writes every element, or why the site is kept."""
    uses = _references(unit, allocation, allocation.statement.end, allocation.function.end)
    if not uses:
        return Kept(f"`{allocation.name}` is never used after the allocation", KeepCategory.DISCARDED)
    use = uses[0]
    line = unit.line_of(use.start)
    statement = _unconditional_statement(unit, use, allocation)
    tokens = unit.tokens
    index = unit.token_index(use.start)
    after = [t.spelling for t in tokens[index + 1 : index + 3]]
    method = after[1] if len(after) == 2 and after[0] in (".", "->") else ""
    launch = _launch_of(unit, index)
    if launch is not None:
        return _kernel_use(unit, allocation, use, launch, statement is not None)
    if statement is not None and method in _FULL_WRITES and _is_statement_call(unit, index, statement):
        self_read = _self_read(unit, allocation, index, method)
        if self_read is not None:
            return self_read
        return Tier.SAFE, [f"L{line}: `{allocation.name}.{method}(...)` writes every element before any read"]
    if statement is not None and method in ("accessor", "data_ptr", "mutable_data_ptr"):
        proof = _element_loop(unit, allocation, use, statement)
        if proof:
            return Tier.SAFE, proof
    out_op = _out_op(unit, index)
    if out_op and statement is not None:
        padded = _padded_size(unit, allocation.call)
        if padded is not None:
            return padded
        return Tier.VALIDATE, [f"L{line}: `{out_op}` writes its output `{allocation.name}`",
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
        if parent.kind == "LAMBDA_EXPR":
            if dispatch is None or parent.start <= dispatch.start or parent.end > dispatch.end:
                return None
            in_dispatched_lambda = True
        elif parent.kind in ("IF_STMT", "SWITCH_STMT", "CASE_STMT", "DEFAULT_STMT", "CONDITIONAL_OPERATOR",
                             "CXX_TRY_STMT", "CXX_CATCH_STMT") or parent.kind in LOOP_KINDS:
            return None
        elif parent.kind == "BINARY_OPERATOR" and parent.spelling in ("&&", "||"):
            return None
        node = parent
    return node if node.parent is allocation.block else None


DISPATCH_MARK = "DISPATCH"  # in the name of ATen's AT_DISPATCH_* macros and of projects' own


def _dispatch_around(unit: CppUnit, use: Node) -> Node | None:
    """The innermost `AT_DISPATCH_*` (or a project's `*DISPATCH*`) macro call around `use`."""
    around = [
        n for n in unit.nodes
        if n.kind == "MACRO_INSTANTIATION" and DISPATCH_MARK in n.spelling and n.start <= use.start < n.end
    ]
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


def _out_op(unit: CppUnit, index: int) -> str:
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
    while parent is not None and parent.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR", "CALL_EXPR") and (
            parent.start, parent.end) == (use.start, use.end):
        parent = parent.parent
    if parent is not None and parent.kind == "RETURN_STMT":
        return Kept(f"{where} is returned before anything writes it (an early return for an empty input?): the "
                    "caller reads the zeros", KeepCategory.RETURNED)
    if not unconditional:
        return Kept(f"{where} is first used on a path that may not run (a branch, a loop, a lambda): elsewhere "
                    "it is read as zeros", KeepCategory.CONDITION)
    call = f"L{line}: `{name}.{method}(...)`"
    if method in _VIEWS:
        return Kept(f"{call} takes a part of it: the rest keeps its zeros", KeepCategory.VIEW_TAKEN)
    if method in _ACCESSOR_METHODS or method in _POINTER_METHODS and _declares(unit, use):
        return Kept(f"{call} reaches its elements, but no loop right after it writes every index first "
                    "(only a 1-D loop from 0 below its size, writing as its first statement, is proven)",
                    KeepCategory.PARTIAL_WRITE)
    if method in _POINTER_METHODS:
        return Kept(f"{call} is stored or passed on: its users are not followed", KeepCategory.STORED)
    if method and method not in _METADATA:
        return Kept(f"{call} may read the zeros", KeepCategory.READ_BEFORE_WRITE)
    if method:
        return Kept(f"{call} comes first: only the first use is examined", KeepCategory.OTHER)
    return Kept(f"{where} is passed on or read: what reads it is not followed", KeepCategory.PASSED)


def _declares(unit: CppUnit, use: Node) -> bool:
    """`T* p = out.data_ptr<T>();`: the use initialises a local."""
    return any(a.kind == "VAR_DECL" for a in use.ancestors() if a.kind not in ("DECL_STMT", "COMPOUND_STMT"))


# -- an element loop on the host ---------------------------------------------------------------------


def _element_loop(unit: CppUnit, allocation: Allocation, use: Node, statement: Node) -> list[str]:
    """`auto a = out.accessor<T, 1>();` (or `T* p = out.data_ptr<T>();`) then at once a loop writing `a[i]` for
    every index: the proof lines, or [] when the pattern is not this."""
    handle = _declared_handle(unit, statement, use)
    if handle is None:
        return []
    block = allocation.block.children
    position = block.index(statement)
    if position + 1 >= len(block) or block[position + 1].kind != "FOR_STMT":
        return []
    loop = block[position + 1]
    tokens = unit.tokens_in(loop.start, loop.end)
    spelled = [t.spelling for t in tokens]
    # for ( <type>* i = 0 ; i < BOUND ; ++i | i++ ) BODY
    try:
        open_at = spelled.index("(")
        first, second = [k for k in range(open_at, len(spelled)) if spelled[k] == ";"][:2]
    except ValueError:
        return []
    init, condition = spelled[open_at + 1 : first], spelled[first + 1 : second]
    close = matching_bracket(tokens, open_at)
    if close is None or len(init) < 3 or init[-2:] != ["=", "0"]:
        return []
    counter = init[-3]
    step = spelled[second + 1 : close]
    if step not in (["++", counter], [counter, "++"]) or len(condition) < 3 or condition[:2] != [counter, "<"]:
        return []
    bound = "".join(condition[2:])
    if not _covers(unit, allocation, bound, handle, loop):
        return []
    body = tokens[close + 1 :]
    if body and body[0].spelling == "{":
        body = body[1:]
    write = _first_statement(body)
    if [t.spelling for t in write[:5]] != [handle, "[", counter, "]", "="]:
        return []
    if any(t.spelling in (allocation.name, handle) for t in write[5:]):
        return []
    if _changes(body, counter):
        return []
    line = unit.line_of(loop.start)
    return [f"L{unit.line_of(statement.start)}: `{handle}` reaches the elements of `{allocation.name}`",
            f"L{line}: the loop writes `{handle}[{counter}]` first, for every {counter} below `{bound}`, "
            f"before any read"]


def _declared_handle(unit: CppUnit, statement: Node, use: Node) -> str | None:
    """The variable declared by `statement` as `out.accessor<T, 1>()` / `out.data_ptr<T>()` of a 1-D tensor."""
    if statement.kind != "DECL_STMT" or len(statement.children) != 1:
        return None
    variable = statement.children[0]
    text = "".join(t.spelling for t in unit.tokens_in(use.start, statement.end))
    accessor = re.fullmatch(rf"{re.escape(use.spelling)}\.accessor<[\w:]+,1>\(\);", text)
    pointer = re.fullmatch(rf"{re.escape(use.spelling)}\.(?:mutable_)?data_ptr<[\w:]+>\(\);", text)
    return variable.spelling if accessor or pointer else None


def _covers(unit: CppUnit, allocation: Allocation, bound: str, handle: str, loop: Node) -> bool:
    """The loop's bound is the tensor's element count: `out.numel()`, `out.size(0)` of a 1-D tensor, or the one
    size the allocation names, a variable nothing changes before the loop."""
    name = allocation.name
    if bound in (f"{name}.numel()", f"{handle}.size(0)"):
        return True
    arguments = allocation.call.arguments()
    if allocation.call.spelling != "zeros" or not arguments:
        return False
    sizes = "".join(t.spelling for t in unit.tokens_in(arguments[0].start, arguments[0].end))
    one_size = sizes[1:-1] if sizes.startswith("{") and "," not in sizes else None
    if bound == f"{name}.size(0)":
        return one_size is not None
    if bound != one_size or not re.fullmatch(r"\w+", bound):
        return False
    # Nothing after the allocation names the size but the loop's condition: no call can change it either.
    after = unit.tokens_in(allocation.statement.end, loop.end)
    return sum(1 for t in after if t.spelling == bound) == 1


def _first_statement(tokens: list[Token]) -> list[Token]:
    depth = 0
    for index, token in enumerate(tokens):
        if token.spelling in ("(", "[", "{"):
            depth += 1
        elif token.spelling in (")", "]", "}"):
            depth -= 1
        elif token.spelling == ";" and depth == 0:
            return tokens[:index]
    return tokens  # a body of one statement: its extent ends before the `;`


def _changes(tokens: list[Token], name: str) -> bool:
    """`name` assigned, incremented, its address taken or passed to a call (which may take it by reference)
    anywhere in `tokens`."""
    for index, token in enumerate(tokens):
        if token.spelling != name:
            continue
        before = tokens[index - 1].spelling if index else ""
        after = tokens[index + 1].spelling if index + 1 < len(tokens) else ""
        if after in _ASSIGNMENTS or after in ("++", "--") or before in ("++", "--", "&"):
            return True
        if before in ("(", ",") and after in (")", ","):
            return True
    return False


# -- a kernel launch ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    kernel: str
    arguments: list[list[Token]]  # the kernel's arguments
    position: int  # which of them holds the reference


def _launch_of(unit: CppUnit, index: int) -> Launch | None:
    """The kernel launch whose argument list holds the reference at tokens[index]."""
    tokens = unit.tokens
    depth = 0
    for position in range(index - 1, -1, -1):
        spelling = tokens[position].spelling
        if spelling in (")", "]", "}"):
            depth += 1
        elif spelling in ("(", "[", "{"):
            if depth == 0:
                if spelling != "(" or position == 0 or tokens[position - 1].spelling != ">>>":
                    return None
                close = matching_bracket(tokens, position)
                opener = next((i for i in range(position - 2, -1, -1) if tokens[i].spelling == "<<<"), None)
                if close is None or opener is None:
                    return None
                arguments = split_top_level(tokens[position + 1 : close])
                held = next(k for k, argument in enumerate(arguments) if any(t.start == tokens[index].start for t in argument))
                return Launch(kernel_name(tokens, opener), arguments, held)
            depth -= 1
        elif spelling == ";":
            return None
    return None


def _kernel_use(unit: CppUnit, allocation: Allocation, use: Node, launch: Launch, unconditional: bool) -> Kept | tuple[Tier, list[str]]:
    line = unit.line_of(use.start)
    where = f"L{line}: `{allocation.name}`"
    if not unconditional:
        return Kept(f"{where} goes to kernel `{launch.kernel}` on a path that may not run (a branch, a loop): "
                    "elsewhere it is read as zeros", KeepCategory.CONDITION)
    argument = [t.spelling for t in launch.arguments[launch.position]]
    if not _whole_tensor_argument(argument, allocation.name):
        return Kept(f"{where} reaches kernel `{launch.kernel}` as `{''.join(argument)}`: not the whole tensor's data",
                    KeepCategory.PASSED)
    padded = _padded_size(unit, allocation.call)
    if padded is not None:
        return padded
    proof = [f"{where} goes to kernel `{launch.kernel}` (argument {launch.position + 1}) as its first use"]
    kernel = _kernel_definition(unit, launch.kernel)
    if kernel is None:
        proof.append(f"kernel `{launch.kernel}` is not defined in this file: whether it writes every element is left "
                     "to --validate (with --build, under poisoned memory)")
        return Tier.VALIDATE, proof
    parameters = [c for c in kernel.children if c.kind == "PARM_DECL"]
    if launch.position >= len(parameters):
        return Kept(f"kernel `{launch.kernel}`'s parameters do not match its launch", KeepCategory.UNRESOLVED)
    parameter = parameters[launch.position].spelling
    body = kernel.body()
    if body is None:
        return Kept(f"kernel `{launch.kernel}` has no body here", KeepCategory.UNRESOLVED)
    writes = _kernel_writes(unit, launch, body, parameter, parameters, allocation)
    if isinstance(writes, Kept):
        return writes
    proof += writes
    proof.append("whether the grid covers every element is left to --validate (with --build, under poisoned memory)")
    return Tier.VALIDATE, proof


def _whole_tensor_argument(argument: list[str], name: str) -> bool:
    """`out.data_ptr<T>()`, `(T*)out.data_ptr()`, `reinterpret_cast<T*>(out.data_ptr())`, `out.packed_accessor32<...>()`."""
    if name not in argument:
        return False
    at = argument.index(name)
    if argument[at + 1 : at + 2] != ["."] or at + 2 >= len(argument) or argument[at + 2] not in _KERNEL_ARGUMENT_METHODS:
        return False
    rest = argument[at + 3 :]
    if rest and rest[0] == "<":
        depth, k = 0, 0
        for k, spelling in enumerate(rest):
            depth += {"<": 1, ">": -1, ">>": -2}.get(spelling, 0)
            if depth <= 0:
                break
        rest = rest[k + 1 :]
    if rest[:2] != ["(", ")"]:
        return False
    trailing = rest[2:]
    return all(t == ")" for t in trailing) and "+" not in argument[:at] and "-" not in argument[:at]


def _kernel_definition(unit: CppUnit, name: str) -> Node | None:
    found = [
        n for n in unit.nodes
        if n.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE") and n.spelling == name and n.body() is not None
        and any(c.kind == "CUDAGLOBAL_ATTR" for c in n.children)
    ]
    return found[0] if len(found) == 1 else None


def _kernel_writes(unit: CppUnit, launch: Launch, body: Node, parameter: str, parameters: list[Node],
                   allocation: Allocation) -> Kept | list[str]:
    """Proof lines for a kernel that only assigns to `parameter[...]`; the keep of the first other use of it."""
    tokens = unit.tokens_in(body.start, body.end)
    name = f"kernel `{launch.kernel}`"
    writes = 0
    for index, token in enumerate(tokens):
        line = unit.line_of(token.start)
        if _ATOMICS.match(token.spelling) and _mentions(tokens, index + 1, parameter):
            return Kept(f"L{line}: {name} accumulates into `{parameter}` with `{token.spelling}`: it reads the zeros",
                        KeepCategory.READ_MODIFY_WRITE)
        if token.spelling != parameter or token.kind != "identifier":
            continue
        end = _subscripts_end(tokens, index)
        if end == index + 1:
            return Kept(f"L{line}: {name} uses `{parameter}` other than by element (passed on, or pointer "
                        "arithmetic): its writes are not seen", KeepCategory.PASSED)
        after = tokens[end].spelling if end < len(tokens) else ""
        if after in _COMPOUND_ASSIGNMENTS or after in ("++", "--") or tokens[index - 1].spelling in ("++", "--"):
            return Kept(f"L{line}: {name} updates `{parameter}[...]` with `{after or tokens[index - 1].spelling}`: "
                        "it reads the zeros", KeepCategory.READ_MODIFY_WRITE)
        if after != "=":
            return Kept(f"L{line}: {name} reads `{parameter}[...]`", KeepCategory.READ_BEFORE_WRITE)
        writes += 1
    if not writes:
        return Kept(f"{name} never writes `{parameter}`", KeepCategory.PARTIAL_WRITE)
    guard = _early_returns(unit, launch, body, parameters, allocation)
    if isinstance(guard, Kept):
        return guard
    return [f"{name} only assigns to `{parameter}[...]` ({writes} place{'s' if writes > 1 else ''}): no read, "
            "no accumulation"] + guard


def _mentions(tokens: list[Token], open_at: int, name: str) -> bool:
    if open_at >= len(tokens) or tokens[open_at].spelling != "(":
        return False
    close = matching_bracket(tokens, open_at)
    return close is not None and any(t.spelling == name for t in tokens[open_at:close])


def _subscripts_end(tokens: list[Token], index: int) -> int:
    """The token after `name[...][...]` (index + 1 when no subscript follows)."""
    end = index + 1
    while end < len(tokens) and tokens[end].spelling == "[":
        close = matching_bracket(tokens, end)
        if close is None:
            return index + 1
        end = close + 1
    return end


def _early_returns(unit: CppUnit, launch: Launch, body: Node, parameters: list[Node],
                   allocation: Allocation) -> Kept | list[str]:
    """A `return` is allowed only as a leading guard `if (i >= bound) return;` among the body's own statements,
    whose bound, when a parameter, is launched with a size of the output."""
    proof = []
    guards: list[Node] = []
    for statement in body.children:
        if statement.kind != "IF_STMT":
            continue
        spelled = [t.spelling for t in unit.tokens_in(statement.start, statement.end)]
        if spelled[-1:] != ["return"] or "else" in spelled or spelled.count("return") != 1:
            continue  # the statement's extent ends before its `;`
        guards.append(statement)
        condition = spelled[2 : spelled.index(")", 2)] if ")" in spelled else []
        bounded = _guard_bound(unit, launch, condition, parameters, allocation, statement)
        if isinstance(bounded, Kept):
            return bounded
        proof += bounded
    for node in body.walk():
        if node.kind == "RETURN_STMT" and not any(guard.start <= node.start < guard.end for guard in guards):
            return Kept(f"L{unit.line_of(node.start)}: kernel `{launch.kernel}` returns early: threads that leave may "
                        "not write their elements", KeepCategory.PARTIAL_WRITE)
    return proof


def _guard_bound(unit: CppUnit, launch: Launch, condition: list[str], parameters: list[Node], allocation: Allocation,
                 statement: Node) -> Kept | list[str]:
    """`i >= n` with `n` a parameter: the launch's argument for `n` must be a size of the output."""
    names = [p.spelling for p in parameters]
    if len(condition) != 3 or condition[1] not in (">=", ">") or condition[2] not in names:
        return Kept(f"L{unit.line_of(statement.start)}: kernel `{launch.kernel}` returns early on "
                    f"`{' '.join(condition)}`, not a bound on the thread's index: threads that leave may not write "
                    "their elements", KeepCategory.PARTIAL_WRITE)
    bound = condition[2]
    argument = "".join(t.spelling for t in launch.arguments[names.index(bound)])
    sizes = _output_sizes(unit, allocation)
    if argument not in sizes:
        return Kept(f"L{unit.line_of(statement.start)}: kernel `{launch.kernel}` leaves threads past `{bound}` = "
                    f"`{argument}`, not shown to be the size of `{allocation.name}`: the grid may not cover it",
                    KeepCategory.PARTIAL_WRITE)
    return [f"L{unit.line_of(statement.start)}: its guard bounds threads by `{bound}` = `{argument}`, the size of "
            f"`{allocation.name}`"]


def _output_sizes(unit: CppUnit, allocation: Allocation) -> set[str]:
    """Spellings of the output's element count or of one of its sizes: `out.numel()`, `out.size(k)`, and the
    sizes `zeros({a, b})` names (`a`, `b`, `a*b`). A guard on one dimension leaves the others to the kernel's
    loop, and the grid to --validate; a guard on anything else is evidence that they differ."""
    name = allocation.name
    spellings = {f"{name}.numel()"}
    arguments = allocation.call.arguments()
    if allocation.call.spelling == "zeros" and arguments:
        sizes = "".join(t.spelling for t in unit.tokens_in(arguments[0].start, arguments[0].end))
        if sizes.startswith("{") and sizes.endswith("}"):
            parts = sizes[1:-1].split(",")
            spellings.update(parts)
            spellings.add("*".join(parts))
            spellings.update(f"{name}.size({k})" for k in range(len(parts)))
    return spellings
