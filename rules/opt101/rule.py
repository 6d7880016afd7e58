"""OPT101 zeros-to-empty: the rule's declarations, its manual, and `check`.

Its steps sit beside it: allocation.py (which calls are allocations),
site.py (where a value goes), examine.py, attribute.py and conclusions.py
(the verdict, from analysis/overwrite.py's proof), alone.py (the sites the
`ast` settles alone), shape.py, edits.py and impact.py (the rewrite and what
it buys), copy_writers.py (what makes an unproven buffer worth validating).
"""

from __future__ import annotations

import ast
from typing import Iterator

import libcst as cst

from optpatch.rule import Judgement, Rule
from optpatch.rule.python import CallIndex, PythonModule, ast_context, root_name

from . import examples
from .allocation import METHODS, REPLACEMENT, ModuleFacts, allocation_kind, allocation_kind_alone, allocations, spellings
from .alone import judged_alone
from .copy_writers import on_self
from .examine import examine
from .site import Site


class ZerosToEmpty(Rule):
    """
    Replace `torch.zeros` with `torch.empty` where every element is provably overwritten before it is read.

    ## What it does
    Finds `torch.zeros(...)`, `torch.zeros_like(x)` and `t.new_zeros(...)`
    (and `torch.full(size, 0)`, `torch.full_like(x, 0)`, `t.new_full(size,
    0)`, which are zeros too) whose result is bound to a fresh local name,
    or wrapped in `nn.Parameter(...)`, or assigned to `self.<name>` in
    `__init__`, and follows every control-flow path from the allocation to
    the first statement that touches the values. When every path overwrites
    all of them before any read, the zero fill is dead and is removed by
    allocating with `empty` instead; every other argument is kept (a `full`
    loses its fill, and where that fill chose the dtype, `dtype=torch.int64`
    or `torch.bool` says it instead).

    A full overwrite is: `copy_`, `fill_`, `zero_` or a random fill; `x[...] =
    v` or `x[:] = v`; `out=` of an operator that PyTorch's own schemas list
    with an `out` overload (analysis/out_ops.json: reductions with `dim`,
    `argmax`, `topk`/`sort`/`max(dim)` tuple outs, ...), whatever the dtype;
    a `torch.nn.init` function (`normal_`, `kaiming_uniform_`, `xavier_*`,
    `trunc_normal_`, `orthogonal_`, `constant_`, `zeros_`, ...); the output
    of a synchronous collective (`all_gather_into_tensor`,
    `reduce_scatter_tensor`, `reduce_scatter`, `scatter`, `recv`,
    `all_to_all_single` without split sizes; `torch.distributed` or
    `deepspeed.comm`, which forwards to it); the output list of a
    synchronous `all_gather` or `all_to_all`, whether it holds fresh
    allocations (`bufs = [torch.zeros(s) for _ in range(n)]`, followed
    element by element: every tensor in the list is written) or views that
    together cover a buffer (`list(buf.chunk(n))`, `list(torch.split(buf,
    s))`, `tensor_split`, `unbind`, given to the collective at once, or bound
    to a name and given to it later with nothing naming the buffer or the
    views in between); a collective called with `async_op=True` whose
    handle, kept in a name, is waited on (`work.wait()`) before anything
    names the buffer or the handle; not a collective given the `group` a
    parameter names (a rank outside the group returns at once and writes
    nothing, and the caller chooses it: composer's `all_gather(tensor,
    group=None)`); the program's own groups (an attribute, a local, a
    module's) are taken to hold the rank; any of these
    through a view of the whole buffer (`x.view(s)`, `x.t()`, `x.data`, and
    `x.reshape(-1)` or `x.flatten()` of contiguous memory); partial writes on
    one straight line of code whose regions together cover the tensor along
    one dimension (`x[:, :h] = a` then `x[:, h:] = b`, `x[:, 0::2]` and
    `x[:, 1::2]`, `x[..., 0]`, `x[..., 1]`, `x[..., 2]` of a size-3 dimension,
    the targets of one tuple assignment); a loop `for i in range(n): x[i] =
    v` whose `n` is the size of the dimension it indexes (the allocation's
    own size expression, `x.shape[k]`, `len(x)`; `for i, r in
    enumerate(rows)` over `len(rows)`; a nest of such loops writing `x[i, :,
    j]`), so that a loop that runs zero times leaves nothing unwritten: the
    tensor is then empty. The size the loop runs over may be a twin's:
    `len(a)`, `a.shape[0]` or `a.size(0)` of another local `a`, bound once,
    by an allocation earlier in the same block whose size on that axis is
    spelled as this one's, with nothing between the two that may change
    that size and nothing before the loop that may change `a`'s shape
    (`a = torch.zeros(n, d)`, `b = torch.zeros(n, d)`, `for i in
    range(len(a)): a[i] = ...; b[i] = ...` fixes both). A full-write method
    chained on the allocation itself (`torch.zeros(n).fill_(v)`,
    `x.new_zeros(s).normal_()`, `.random_`, `.uniform_`, `.exponential_`,
    `.copy_`, ...; `.zero_()` and `.fill_(0)` are advice, as below) is a
    full overwrite: it becomes `empty` plus the same call, so the dtype
    stays the allocation's (`torch.full(n, v)` would take it from `v`) and
    a random fill draws the same numbers from the same generator. Before
    the write only metadata is used: `x.shape`, `x.size()`, `x.dtype`,
    `x.device`, `x.dim()`, `x.numel()`, `len(x)`, `isinstance(x, ...)`, the
    template of `torch.empty_like(x)` and the other `*_like` factories, the
    receiver of `x.new_empty(...)` and the other `new_*` constructors. In
    `__init__`, `self.register_buffer`, `register_parameter`, `add_module`
    and `register_module` with a literal name other than the attribute's,
    and arguments that do not name `self`, read nothing of it: they store
    what they are given under that name.

    An allocation whose value nothing reads at all (a discarded result, `_ =
    t.new_zeros(n)`, a name reassigned or deleted first) is advice, not a
    fix: it is dead code, or there for a side effect of the call. So is a
    zeros that every path zeroes again before any read (`x.zero_()`,
    `x.fill_(0)`, `x[:] = 0`, `nn.init.zeros_`, `torch.zeros(n).zero_()`):
    its zeros are the values wanted, and the second zeroing is what gains
    nothing.

    ## Why is this bad
    `torch.zeros` is `torch.empty` plus a fill: on CUDA one more kernel launch
    and a memset over the whole buffer, paid on every call of a hot path, for
    values nobody reads.

    ## Example
    ```python
    def gather_rows(src, index):
        out = torch.zeros(index.numel(), src.shape[1], device=src.device)
        torch.index_select(src, 0, index, out=out)
        return out
    ```

    ## Use instead
    ```python
    def gather_rows(src, index):
        out = torch.empty(index.numel(), src.shape[1], device=src.device)
        torch.index_select(src, 0, index, out=out)
        return out
    ```

    ## Fix safety
    `safe` only with a proof: on every path the first use of the values is a
    full overwrite. A blocking use keeps the site: a call that receives the
    tensor, a view or slice of it that is kept, an in-place
    read-modify-write (`+=`, `add_`, `index_add_`, `scatter_add_`), a partial
    or masked write that later writes do not complete, `return`/`yield`,
    storing it in an attribute or container, a write in only one branch, a
    write inside a loop that may run zero times (unless the loop runs over
    the dimension's own size), a use of the buffer before the `wait()` of
    an asynchronous collective, or a handle not kept in a name, `gather`
    (its list is written on the destination rank only), a list sliced or
    read before its collective, a `recv` into a slice, covering views used
    in any other way, a closure that captures it, `locals()`,
    `eval` and frame access, or a read on an exception path. Every path
    counts: `break`/`continue` (also from a `finally`), the next iteration
    (its `while` test included), a loop `else` that `break` skips, and an
    exception raised before the write that a handler catches and falls
    through, or that a `with` may suppress (only context managers known to
    re-raise, such as `torch.no_grad()`, make a `with` straight-line code).
    Bounds compared between writes must keep their value: a name rebound, or
    (for `len(a)`, `cfg.h`) passed to a call or called a method on in
    between, ends the proof. Module-level and class-level names are not
    local and are always kept. `self.<name>` is followed only in `__init__`,
    where until it returns nothing else holds the object; a method called on
    `self`, a property of the class read, `self` passed on or `super()`
    before the write count as reads, and so does reaching the end of
    `__init__` unwritten. `optpatch explain
    FILE:LINE` prints the proof or the blocking use.

    Never a fix inside a block that expects or swallows an exception
    (`pytest.raises`, `self.assertRaises*`, `assertWarns*`,
    `contextlib.suppress`, a `try` whose handler may catch it): `zeros` and
    `empty` may raise differently, and there the exception is the
    behaviour. These are kept as "inside an exception check".

    `validate`: `new_zeros`, `zeros_like` and their `full` forms where the
    scanned file, or a module of the project it imports, defines a class
    with `__torch_dispatch__` or `__torch_function__` (a tensor subclass may
    implement `new_zeros` and not `new_empty`); a buffer stored on `self`
    that the class fills with a full or prefix `copy_` in another method;
    and a local buffer whose every use is a prefix slice that is copied into
    before it is read. None can be proven statically; they are applied only
    when a validation run (tests with uninitialised memory poisoned) passes
    with them.

    Always kept, and said so: padded or tiled buffers (a size from
    `round_up`, `cdiv`, ...), integer index or id tensors (token ids,
    positions, slot tables), dummy inputs for CUDA-graph capture, buffers in
    test functions (compared against a zero reference), and any site whose
    proof fails. These are never proposed for validation; a static proof of
    a full overwrite still applies to them, since it leaves no element
    unwritten, padding and garbage indices included.

    ## Known problems
    Names are resolved within one file: a `zeros` re-exported by another
    module of the project is not recognised (a false negative, never a wrong
    rewrite). A bare `zeros(...)` imported with `from torch import zeros`
    gets `empty` added to that import; if the file already uses the name
    `empty` for something else, or has a star import that could rebind the
    bare name, the site is kept. A file that defines its own `new_zeros`
    method has its `.new_zeros(...)` calls left alone (the receiver may not
    be a tensor). Context managers outside the known list are assumed to
    possibly suppress exceptions, which keeps some safe sites. Partial
    writes combine only on one straight line of one block, along one
    dimension; a loop proof needs the write to be the innermost body's only
    use of the tensor, apart from reading back the element it wrote. A loop
    over `enumerate(rows)` assumes that no code reached from its body
    shrinks `rows` through another name (the body may not name it). In
    `__init__`, a property of a base class (named like the attribute, or
    read as `self.<name>` before the write) is not seen; the class's own
    methods and properties are. The
    modules searched for tensor subclasses are those the file imports
    directly, found as Python would inside the scanned root; a module that
    appears later at a path that was missing is noticed only when the file
    itself changes; `torch.zeros(n)` with no tensor argument is not made
    validate tier by a subclass (only a dispatch mode would see it, and
    modes are not tracked). `deepspeed.comm`'s collectives are taken to
    behave as the `torch.distributed` ones they forward to (not under its
    debugging switch `comm_off`, which turns them into no-ops). A
    registration runs torch's global registration hooks
    (`register_module_buffer_registration_hook` and the like), which are
    assumed not to read the module's parameters, and a method a base class
    defines under a registration's name is not seen (the class's own is).

    The name joins the import in sorted place when the names are sorted
    (isort, usort, ruff's `I`), otherwise last; where black or ruff format
    the file, an import that now passes the line limit is exploded one name
    per line, as they would write it (docs/formatting.md).

    ## Measured impact
    Measured by `benchmarks/gpu_impact.py` on an H100 (torch 2.11, CUDA 13.0;
    docs/benchmarks.md): host time per call 7.5-8.6 us -> 2.3-2.4 us at any
    size; GPU time 14.0 -> 8.6 us at 1 MiB, 28.8 -> 8.6 us at 64 MiB, 334.7 ->
    8.5 us at 1 GiB. Pinned host buffers in steady state: 2.8 -> 1.5 us at
    64 KiB, 358 -> 2.1 us at 64 MiB. On the CPU (`benchmarks/alloc_cpu.py`,
    2-core EPYC, torch 2.13): 0.13 us at 1 KiB, 0.5 us at 64 KiB, 8 us at
    1 MiB. Each finding's impact class follows its device and, when the call
    spells every size, its bytes: below 1 MiB on CUDA (or 64 KiB pinned, or
    1 MiB on the CPU) it is low, from 64 MiB high, and its basis quotes the
    figure for that size. One-time allocations (`__init__`, module level,
    set-up) gain nothing measurable and are reported as low value.

    ## References
    - vLLM #26680, #42988, ray #56882, FBGEMM #6257: kept changes of this kind.
    - vLLM #45739, #37442 -> #38359, #31928, #46489 / #47029; sglang #1782,
      #2048; transformers #45050, #48205; FBGEMM #5754: reverted or refused
      ones, which this rule's proof obligation is designed to reject.
    - https://pytorch.org/docs/stable/generated/torch.empty.html
    - https://pytorch.org/docs/stable/nn.init.html
    """

    code = "OPT101"
    name = "zeros-to-empty"
    summary = "torch.zeros -> torch.empty where every element is provably overwritten before it is read"
    language = "python"
    default_tier = "safe"
    tags = ("performance", "memory")
    version = 4  # 4: set-up code keeps its class as the size, for the call graph to weigh; 2: list collectives and covering views, chained writes, twin loop bounds, module registrations; 3: a collective given its caller's `group` writes nothing on a rank outside it
    trigger_words = ("zeros", "full(", "full_like(")
    profiled_ops = ("aten::zeros", "aten::zeros_like", "aten::full", "aten::full_like", "aten::fill_", "aten::zero_")

    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files that call something spelled like an allocation (`zeros` in a comment or a string is not one)."""
        return bool(allocations(calls))

    @classmethod
    def needs(cls, calls: CallIndex) -> list[ast.AST]:
        """The allocations, and what `check` looks up elsewhere in the module.

        Allocations: every call spelled `zeros`, `zeros_like` or `new_zeros`,
        `full`, `full_like` or `new_full` with a zero fill, or a name `from
        torch import zeros as z` binds, except those whose verdict their `ast`
        settles (alone.py's `judged_alone`: a result passed, returned, stored or
        discarded straight away). Elsewhere: the `self.<name>.copy_(...)`
        calls that `attribute_writer` looks for in the class, the module's
        own `new_zeros` and `new_full` methods, and every `from torch import`,
        whose count `rewrite_edits` needs. The tensor subclasses that make a
        fix validate tier are found in the file's text and its `ast`
        (analysis/tensor_subclasses.py), which the outline does not change.
        """
        writers = [call for call in calls.named("copy_") if on_self(call.func)]
        unsettled = [call for call in allocations(calls) if judged_alone(calls, call) is None]
        methods = [function for name in METHODS for function in calls.functions.get(name, ())]
        return [*unsettled, *writers, *methods, *calls.torch_imports]

    @classmethod
    def resolved_in_stubs(cls, calls: CallIndex) -> set[str]:
        """The root names of the allocations' callees: `_check_stubbed` resolves those of the sites judged
        alone through the module's bindings (all of them here: the cheaper question, and a superset)."""
        return {root for root in map(root_name, (call.func for call in allocations(calls))) if root is not None}

    def check(self, module: PythonModule) -> Iterator[Judgement]:
        facts = ModuleFacts.gather(module)
        names = spellings(module.text(alias.asname.name) for node in facts.torch_imports for alias in node.names
                          if alias.asname and module.text(alias.name) in REPLACEMENT)
        for call in facts.calls:
            func = call.func
            if (func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None) not in names:
                continue  # the calls `allocations` gives `needs` and `screen`: no other can be an allocation
            kind = allocation_kind(module, facts, call)
            if kind is not None:
                context = module.context(call)
                yield Judgement(module.start(call), context, examine(Site(module, call, kind, context, facts)))
        if module.outlined:
            yield from self._check_stubbed(module)

    def _check_stubbed(self, module: PythonModule) -> Iterator[Judgement]:
        """The allocations in functions the outline stubbed, judged from the screen's `ast`.

        `needs` left their functions out only because `judged_alone` settles
        their verdict without them: the same keep or advice, at the same
        place, with the same context, that `examine` gives on libcst's tree
        of the whole module (tests/python/test_python_outline.py holds the
        two to the same findings).
        """
        calls = module.screen
        for call in allocations(calls):
            if not module.stubbed(call):
                continue
            use = judged_alone(calls, call)
            if use is None:
                raise AssertionError(f"L{call.lineno}: the outline stubbed an allocation that needs its function")
            if allocation_kind_alone(module, calls, call):
                yield Judgement(module.ast_start(call), ast_context(use.ancestors), use.verdict(module))
