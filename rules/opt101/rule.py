from __future__ import annotations

import ast
import re
from typing import Iterator, NamedTuple

import libcst as cst

from optpatch.analysis.expected_exceptions import expecting_block
from optpatch.analysis.overwrite import (
    CHAINED_FULL_WRITES, OverwriteProof, Shape, Step, Tracked, prove_chained_overwrite, prove_full_overwrite,
)
from optpatch.analysis.tensor_subclasses import receiver_caution
from optpatch.rule import Judgement, KeepCategory, Rule, Tier
from optpatch.rule.python import (
    CallIndex, PythonModule, ast_context, ast_dotted_name, callee_name, dotted_name, preview,
    root_name, walk,
)
from optpatch.analysis.torch_api import INTEGER_DTYPES, keyword_arg, padded_size_call

from . import examples
from .allocation import (
    METHODS, ON_A_RECEIVER, REPLACEMENT, ModuleFacts, allocation_kind, allocation_kind_alone, allocations, spellings,
)
from .copy_writers import attribute_writer, on_self, prefix_copy_pattern
from .edits import rewrite_edits
from .impact import impact_of
from .shape import allocated_shape, shape_of
from .site import (
    ANOTHER_OBJECT, DISCARDED, FILLS_OUT, IN_AN_EXPRESSION, PASSED, RETURNED, SEVERAL_NAMES, UNPACKED, USED_THROUGH, allocated_value,
    bound_target, moved_result, unbound_reason,
)

_OPERATION = {"zeros_like": "zeros_like", "full_like": "full_like", "new_zeros": "new_zeros", "new_full": "new_full"}
_INDEX_NAME = re.compile(r"(ids?|idx|index|indices|positions?|pos|slots?|slot_mapping|block_tables?|mapping|tokens?|offsets?)$")
_DUMMY_NAME = re.compile(r"(dummy|warmup|graph|capture)")

DISCARDED_BASIS = "no rewrite: an allocation nothing reads is either dead code or there for a side effect of the call"
ZEROED_AGAIN_BASIS = "no rewrite: the allocation's zeros are the values wanted; the fill after it is the one to remove"


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
    names the buffer or the handle; any of these
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
    version = 2  # 2: list collectives and covering views, chained writes, twin loop bounds, module registrations
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
        settles (`_judged_alone`: a result passed, returned, stored or
        discarded straight away). Elsewhere: the `self.<name>.copy_(...)`
        calls that `attribute_writer` looks for in the class, the module's
        own `new_zeros` and `new_full` methods, and every `from torch import`,
        whose count `_rewrite_edits` needs. The tensor subclasses that make a
        fix validate tier are found in the file's text and its `ast`
        (analysis/tensor_subclasses.py), which the outline does not change.
        """
        writers = [call for call in calls.named("copy_") if on_self(call.func)]
        unsettled = [call for call in allocations(calls) if _judged_alone(calls, call) is None]
        methods = [function for name in METHODS for function in calls.functions.get(name, ())]
        return [*unsettled, *writers, *methods, *calls.torch_imports]

    @classmethod
    def resolved_in_stubs(cls, calls: CallIndex) -> set[str]:
        """The root names of the allocations' callees: `_check_stubbed` resolves those of the sites judged
        alone through the module's bindings (all of them here: the cheaper question, and a superset)."""
        return {root for root in map(root_name, (call.func for call in allocations(calls))) if root is not None}

    def check(self, module: PythonModule) -> Iterator[Judgement]:
        self.facts = ModuleFacts.gather(module)
        names = spellings(module.text(alias.asname.name) for node in self.facts.torch_imports for alias in node.names
                          if alias.asname and module.text(alias.name) in REPLACEMENT)
        for call in self.facts.calls:
            func = call.func
            if (func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None) not in names:
                continue  # the calls `allocations` gives `needs` and `screen`: no other can be an allocation
            kind = allocation_kind(module, self.facts, call)
            if kind is not None:
                yield self._examine(module, call, kind)
        if module.outlined:
            yield from self._check_stubbed(module)

    def _check_stubbed(self, module: PythonModule) -> Iterator[Judgement]:
        """The allocations in functions the outline stubbed, judged from the screen's `ast`.

        `needs` left their functions out only because `_judged_alone` settles
        their verdict without them: the same keep or advice, at the same
        place, with the same context, that `_examine` gives on libcst's tree
        of the whole module (tests/python/test_python_outline.py holds the
        two to the same findings).
        """
        calls = module.screen
        for call in allocations(calls):
            if not module.stubbed(call):
                continue
            judged = _judged_alone(calls, call)
            if judged is None:
                raise AssertionError(f"L{call.lineno}: the outline stubbed an allocation that needs its function")
            if not allocation_kind_alone(module, calls, call):
                continue
            reason = judged.reason.format(module.ast_text(judged.callee) if judged.callee else "")
            at, context = module.ast_start(call), ast_context(judged.ancestors)
            if judged.category is KeepCategory.DISCARDED:
                yield self.advice(module, at, reason=reason, context=context, basis=DISCARDED_BASIS, category=judged.category)
            else:
                yield self.keep(module, at, reason=reason, category=judged.category, context=context)

    # -- the verdict ----------------------------------------------------------------------

    def _examine(self, module: PythonModule, call: cst.Call, kind: str) -> Judgement:
        context = module.context(call)
        if keyword_arg(call, "out") is not None:
            return self._keep(module, call, context, *FILLS_OUT)
        star = self.facts.star_import
        if isinstance(call.func, cst.Name) and star:
            return self._keep(module, call, context, f"`{star}` may rebind `{call.func.value}`: it may not be torch's",
                              KeepCategory.NOT_TORCH)
        chained = prove_chained_overwrite(module, moved_result(module, call))
        if chained is not None:
            if chained.zeroed_again:
                return self._zeroed_again(module, call, context, "the allocation", chained)
            return self._fix(module, call, kind, context, Tier.SAFE, f"nothing reads the zeros: {chained.summary()}",
                             chained.steps)
        allocation, parameter = allocated_value(module, call)
        parent = module.parent(allocation)
        if isinstance(parent, cst.ListComp) and parent.elt is allocation and not parameter:
            listed = bound_target(module.parent(parent), parent)
            if isinstance(listed, cst.Name):
                return self._examine_elements(module, call, kind, context, module.parent(parent), listed.value)
        target = bound_target(parent, allocation)
        if target is None:
            if isinstance(parent, cst.Expr):
                return self._discarded(module, call, context, DISCARDED[0], [])
            return self._keep(module, call, context, *unbound_reason(module, parent))
        shape = shape_of(module, call, kind, allocation)
        if isinstance(target, cst.Attribute):
            return self._examine_attribute(module, call, kind, parent, target, context, shape, parameter)
        if not isinstance(target, cst.Name):
            return self._keep(module, call, context, *UNPACKED)
        proof = prove_full_overwrite(module, parent, Tracked(target.value), shape,
                                     lambda value: allocated_shape(module, self.facts, value))
        if proof.proven:
            return self._proven(module, call, kind, context, target.value, proof)
        prefix_writer = None if parameter else prefix_copy_pattern(module, parent, target.value)
        if prefix_writer is not None and not self._always_keep(module, call, target.value):
            reason = (
                f"every use of `{target.value}` is a prefix slice, first filled by {prefix_writer}; "
                "whether later reads stay inside the written prefix cannot be proven statically"
            )
            return self._fix(module, call, kind, context, Tier.VALIDATE, reason, proof.steps)
        return self._unproven(module, call, context, target.value, proof)

    def _examine_elements(self, module, call, kind, context, statement, name: str) -> Judgement:
        """`name = [torch.zeros(s) for _ in range(n)]`: the proof follows every tensor in the list (the output list
        of a synchronous `all_gather` or `all_to_all` writes them all)."""
        proof = prove_full_overwrite(module, statement, Tracked(name, elements=True))
        if proof.proven:
            return self._proven(module, call, kind, context, name, proof)
        return self._unproven(module, call, context, name, proof)

    def _proven(self, module, call, kind, context, name: str, proof: OverwriteProof) -> Judgement:
        """A proof that the zeros are never read: a fix when some path fills the buffer, else the allocation is dead."""
        if not proof.fills:
            discarded = [f"L{step.line}: {step.text}" for step in proof.steps if step.writes]
            reason = (f"the value of `{name}` is never read{' (' + '; '.join(discarded) + ')' if discarded else ''}: the "
                      "allocation is dead, or kept for a side effect of the call (an exception, a dispatch); remove it, "
                      "or leave it as it is")
            return self._discarded(module, call, context, reason, proof.steps)
        if proof.zeroed_again:
            return self._zeroed_again(module, call, context, f"`{name}`", proof)
        return self._fix(module, call, kind, context, Tier.SAFE, _proof_reason(name, proof), proof.steps)

    def _zeroed_again(self, module, call, context, what: str, proof: OverwriteProof) -> Judgement:
        """Zeros that every path zeroes again before any read: advice to remove the second zeroing, not a fix."""
        again = "; ".join(f"L{step.line}: {step.text}" for step in proof.zeroed_again)
        reason = f"{what} is zeroed again before any read ({again}): the second zeroing gains nothing; remove it, or leave it as it is"
        return self.advice(module, module.start(call), reason=reason, context=context, basis=ZEROED_AGAIN_BASIS,
                           category=KeepCategory.NO_GAIN)

    def _unproven(self, module, call, context, name: str, proof: OverwriteProof) -> Judgement:
        assert proof.blocker is not None
        always = self._always_keep(module, call, name)
        reason = f"L{proof.blocker.line}: {proof.blocker.text}" + (f" ({always[0]})" if always else "")
        category = always[1] if always else proof.blocker.category or KeepCategory.OTHER
        return self._keep(module, call, context, reason, category, proof.steps + [proof.blocker])

    def _examine_attribute(self, module, call, kind, statement, target: cst.Attribute, context, shape: Shape,
                           parameter: bool) -> Judgement:
        owner = target.value
        if not (isinstance(owner, cst.Name) and owner.value == "self"):
            return self._keep(module, call, context, *ANOTHER_OBJECT)
        attribute = target.attr.value
        function = module.enclosing_function(statement)
        proof = None
        if _is_constructor(module, function) and not _class_defines(module, function, attribute):
            # Until __init__ returns, only its own code can see the attribute: the proof follows it there.
            proof = prove_full_overwrite(module, statement, Tracked(attribute, attribute=True), shape)
            if proof.proven:
                return self._proven(module, call, kind, context, f"self.{attribute}", proof)
        if parameter:
            if proof is None:
                return self._keep(module, call, context, f"parameter `self.{attribute}` is created outside __init__, where "
                                  "other methods may read it before it is initialised", KeepCategory.ATTRIBUTE_BUFFER)
            return self._unproven(module, call, context, f"self.{attribute}", proof)
        always = self._always_keep(module, call, attribute)
        if always:
            return self._keep(module, call, context, f"attribute buffer `self.{attribute}`: {always[0]}", always[1])
        writer = attribute_writer(module, call, attribute)
        if writer is None:
            return self._keep(
                module, call, context,
                f"attribute buffer `self.{attribute}` has no full or prefix `copy_` in its class; other methods may read the zeros",
                KeepCategory.ATTRIBUTE_BUFFER,
            )
        reason = (
            f"attribute buffer `self.{attribute}` is filled by {writer}; other methods may read elements "
            "that were never written, so this needs a validation run"
        )
        return self._fix(module, call, kind, context, Tier.VALIDATE, reason, [])

    def _always_keep(self, module: PythonModule, call: cst.Call, name: str) -> tuple[str, KeepCategory] | None:
        """The "always keep" cases of docs/rules/OPT101.md, recognised by their usual shapes: why, and which.

        They stop a site from being proposed for validation; a static proof
        of a full overwrite still applies to them, since it leaves no element
        unwritten (an index tensor included).
        """
        padding = padded_size_call(call)
        if padding:
            return (f"padded or tiled size from `{padding}(...)`: a writer bounded by lengths leaves the padding unwritten",
                    KeepCategory.PADDED)
        dtype = keyword_arg(call, "dtype")
        if dtype is not None and dotted_name(dtype.value) in INTEGER_DTYPES and _INDEX_NAME.search(name.lower()):
            return "integer index or id tensor: garbage indices reach an embedding or gather", KeepCategory.INDEX_TENSOR
        if _DUMMY_NAME.search(name.lower()):
            return "dummy input for warm-up or CUDA-graph capture: its values flow through the model", KeepCategory.DUMMY_INPUT
        if _in_test(module, call):
            return ("test fixture: compared in full against a reference, where unwritten elements must be zero",
                    KeepCategory.TEST_FIXTURE)
        return None

    # -- findings -----------------------------------------------------------------------------

    def _fix(self, module, call, kind, context, tier: Tier, reason: str, steps: list[Step]) -> Judgement:
        expecting = expecting_block(module, call)
        if expecting is not None:
            return self._keep(module, call, context, f"{expecting}: `zeros` and `empty` may raise differently there, and "
                              "the exception is part of what the code does", KeepCategory.EXPECTED_EXCEPTION, steps)
        edits = rewrite_edits(module, call, kind, self.facts.torch_imports)
        if isinstance(edits, str):
            return self._keep(module, call, context, edits, KeepCategory.CANNOT_SPELL, steps)
        if tier is Tier.SAFE and kind in ON_A_RECEIVER:
            caution = receiver_caution(module, f"`{_OPERATION[kind]}`")
            if caution is not None:
                tier, reason = Tier.VALIDATE, f"{reason}; but {caution}"
        impact, basis = impact_of(module, call, kind, context)
        start, end = module.span(call)
        return self.fix(
            module, module.start(call), reason=reason, tier=tier, edits=edits, context=context, impact=impact, basis=basis,
            replacement=preview(module.source.text, start, end, edits), proof=[f"L{s.line}: {s.text}" for s in steps],
        )

    def _discarded(self, module, call, context, reason: str, steps: list[Step]) -> Judgement:
        """An allocation whose value nothing reads: advice, never a fix (the call may be there for what it raises)."""
        expecting = expecting_block(module, call)
        if expecting is not None:
            return self._keep(module, call, context, f"{expecting}: the call may be there for the exception it raises",
                              KeepCategory.EXPECTED_EXCEPTION, steps)
        return self.advice(module, module.start(call), reason=reason, context=context, basis=DISCARDED_BASIS,
                           category=KeepCategory.DISCARDED)

    def _keep(self, module, call, context, reason: str, category: KeepCategory, steps: list[Step] = ()) -> Judgement:
        return self.keep(module, module.start(call), reason=reason, category=category, context=context,
                         proof=[f"L{s.line}: {s.text}" for s in steps])


# -- helpers (module level: they need no rule state) -----------------------------------------


def _is_constructor(module: PythonModule, function: cst.FunctionDef | None) -> bool:
    """`__init__` defined directly in a class: until it returns, nothing outside it holds the new object."""
    if function is None or function.name.value != "__init__":
        return False
    block = module.parent(function)
    return isinstance(block, cst.IndentedBlock) and isinstance(module.parent(block), cst.ClassDef)


def _class_defines(module: PythonModule, function: cst.FunctionDef, attribute: str) -> bool:
    """The class itself names `attribute` (a method, a property, a class attribute): `self.<attribute>` may not be
    the instance's own slot."""
    cls = module.parent(module.parent(function))
    for statement in cls.body.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == attribute:
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Assign, cst.AnnAssign)) and attribute in {
                node.value for node in walk(small) if isinstance(node, cst.Name)
            } for small in statement.body
        ):
            return True
    return False


class _Judged(NamedTuple):
    reason: str  # with `{}` for the callee's text when `callee` is set
    category: KeepCategory  # DISCARDED: advice, else a keep
    callee: ast.expr | None
    ancestors: list[ast.AST]  # the allocation's, up to its outermost function: its context


_EXCEPTION_BLOCKS = (ast.With, ast.AsyncWith, ast.Try, ast.TryStar)


def _judged_alone(calls: CallIndex, call: ast.Call) -> _Judged | None:
    """The keep (or advice) `_examine` gives this allocation, when the call and its parents settle it; else None.

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
        return _Judged(*FILLS_OUT, None, ancestors)
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
        return None if any(type(node) in _EXCEPTION_BLOCKS for node in ancestors) else _Judged(*DISCARDED, None, ancestors)
    if kind is ast.Assign and parent.value is result:
        if len(parent.targets) > 1:
            return _Judged(*SEVERAL_NAMES, None, ancestors)
        target = parent.targets[0]
        if type(target) is ast.Name:
            return None
        if type(target) is ast.Attribute:
            return None if type(target.value) is ast.Name and target.value.id == "self" else _Judged(*ANOTHER_OBJECT, None, ancestors)
        return _Judged(*UNPACKED, None, ancestors)
    if kind is ast.Return:
        return _Judged(*RETURNED, None, ancestors)
    if kind is ast.Call and any(argument is result for argument in parent.args):
        return _Judged(*PASSED, parent.func, ancestors)
    if kind is ast.keyword or kind is ast.Starred and type(owner) is ast.Call and any(a is parent for a in owner.args):
        return _Judged(*PASSED, owner.func, ancestors) if type(owner) is ast.Call else None  # a class's keywords: no Call
    if kind is ast.Attribute:
        if parent.attr in CHAINED_FULL_WRITES and type(owner) is ast.Call and owner.func is parent:
            return None  # `torch.zeros(n).fill_(v)`: `prove_chained_overwrite`
        return _Judged(USED_THROUGH[0].format(parent.attr), USED_THROUGH[1], None, ancestors)
    if kind is ast.ListComp and parent.elt is result and type(owner) is ast.Assign and len(owner.targets) == 1 \
            and type(owner.targets[0]) is ast.Name:
        return None  # every tensor in a list bound to a name: `_examine_elements`
    if kind in (ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) or type(owner) is ast.ClassDef:
        return None
    return _Judged(*IN_AN_EXPRESSION, None, ancestors)


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


def _proof_reason(name: str, proof: OverwriteProof) -> str:
    return f"every path overwrites `{name}` before reading it: {proof.summary()}"


def _in_test(module: PythonModule, call: cst.Call) -> bool:
    """Inside a test function or a Test* class: its buffers are compared against references."""
    for scope in module.ancestors(call):
        if isinstance(scope, cst.FunctionDef) and scope.name.value.startswith("test"):
            return True
        if isinstance(scope, cst.ClassDef) and scope.name.value.startswith("Test"):
            return True
    return False

