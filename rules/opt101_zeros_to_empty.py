from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

import libcst as cst

from optpatch.planner import preview
from optpatch.analysis.overwrite import OverwriteProof, Step, prove_full_overwrite
from optpatch.python_edits import add_import_name
from optpatch.python_frontend import PythonModule, ast_context, dotted_name, walk
from optpatch.python_screen import CallIndex, ast_dotted_name, callee_name, root_name
from optpatch.rule import Context, Edit, Example, Finding, Impact, KeepCategory, Rule, Tier
from optpatch.analysis.torch_api import INTEGER_DTYPES, is_true, keyword_arg, padded_size_call, string_value

_REPLACEMENT = {"zeros": "empty", "zeros_like": "empty_like", "new_zeros": "new_empty"}
_TORCH_ZEROS = frozenset({"torch.zeros", "torch.zeros_like"})
_INDEX_NAME = re.compile(r"(ids?|idx|index|indices|positions?|pos|slots?|slot_mapping|block_tables?|mapping|tokens?|offsets?)$")
_DUMMY_NAME = re.compile(r"(dummy|warmup|graph|capture)")

CUDA_BASIS = (
    "skips the fill launch and the memset: host time per call 7.5-8.6 us -> 2.3-2.4 us, GPU time "
    "28.8 -> 8.6 us at 64 MiB and 334.7 -> 8.5 us at 1 GiB (H100, torch 2.11, docs/benchmarks.md; RULES.md agrees)"
)
PINNED_BASIS = (
    "pinned host buffer, steady state: 2.8 -> 1.5 us at 64 KiB, 358 -> 2.1 us at 64 MiB per call "
    "(H100 host, torch 2.11, docs/benchmarks.md)"
)
CPU_BASIS = (
    "CPU tensor: skips a memset, ~0.5 us at 64 KiB, 8 us at 1 MiB, 25 ms at 64 MiB with first-touch page faults "
    "(2-core EPYC, torch 2.13 CPU, docs/benchmarks.md)"
)
ONCE_BASIS = "one-time allocation: the saving (~5 us of host time plus the memset, docs/benchmarks.md) is paid once, not per step"


class ZerosToEmpty(Rule):
    """
    Replace `torch.zeros` with `torch.empty` where every element is provably overwritten before it is read.

    ## What it does
    Finds `torch.zeros(...)`, `torch.zeros_like(x)` and `t.new_zeros(...)` whose
    result is bound to a fresh local name, and follows every control-flow path
    from the allocation to the first statement that touches the values. When
    that statement overwrites all of them on every path (`copy_`, `fill_`,
    `zero_`, the random fills, `x[...] = v` / `x[:] = v`, `out=` of an op that
    writes its whole output, or a plain reassignment), with only metadata uses
    (`x.shape`, `x.size()`, `x.dtype`, `x.device`, `x.dim()`, `x.numel()`,
    `len(x)`) before it, the zero fill is dead and is removed by allocating
    with `empty` instead. Every other argument is kept.

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
    `safe` only with a proof: the allocation is bound to a local name, and on
    every path the first use of its values is a full overwrite. A blocking use
    keeps the site: a call that receives the tensor, a view or slice of it,
    an in-place read-modify-write (`+=`, `add_`, `index_add_`,
    `scatter_add_`), a partial or masked write, `return`/`yield`, storing it
    in an attribute or container, a write in only one branch, a write inside
    a loop (it may run zero times), a closure that captures it, `locals()`,
    `eval` and frame access, or a read on an exception path. Every path
    counts: `break`/`continue` (also from a `finally`), the next iteration
    (its `while` test included), a loop `else` that `break` skips, and an
    exception raised before the write that a handler catches and falls
    through, or that a `with` may suppress (only context managers known to
    re-raise, such as `torch.no_grad()`, make a `with` straight-line code).
    Module-level and class-level names are not local and are always kept.
    `optpatch explain FILE:LINE` prints the proof or the blocking use.

    `validate`: a buffer stored on `self` that the class fills with a full or
    prefix `copy_`, and a local buffer whose every use is a prefix slice that
    is copied into before it is read. Neither can be proven statically (other
    methods may read the tail); they are applied only when a validation run
    (tests with uninitialised memory poisoned) passes with them.

    Always kept, and said so: padded or tiled buffers (a size from
    `round_up`, `cdiv`, ...), integer index or id tensors (token ids,
    positions, slot tables), dummy inputs for CUDA-graph capture, buffers in
    test functions (compared against a zero reference), and any site whose
    proof fails. These are never proposed for validation; a static proof of
    a full overwrite still applies to them, since it covers the padding too.

    ## Known problems
    Names are resolved within one file: a `zeros` re-exported by another
    module of the project is not recognised (a false negative, never a wrong
    rewrite). A bare `zeros(...)` imported with `from torch import zeros`
    gets `empty` added to that import; if the file already uses the name
    `empty` for something else, or has a star import that could rebind the
    bare name, the site is kept. A file that defines its own `new_zeros`
    method has its `.new_zeros(...)` calls left alone (the receiver may not
    be a tensor). Context managers outside the known list are assumed to
    possibly suppress exceptions, which keeps some safe sites.

    The name joins the import in sorted place when the names are sorted
    (isort, usort, ruff's `I`), otherwise last; where black or ruff format
    the file, an import that now passes the line limit is exploded one name
    per line, as they would write it (docs/formatting.md).

    ## Measured impact
    Measured by `benchmarks/gpu_impact.py` on an H100 (torch 2.11, CUDA 13.0;
    docs/benchmarks.md): host time per call 7.5-8.6 us -> 2.3-2.4 us at any
    size; GPU time 14.0 -> 8.6 us at 1 MiB, 28.8 -> 8.6 us at 64 MiB, 334.7 ->
    8.5 us at 1 GiB. Pinned host buffers in steady state: 2.8 -> 1.5 us at
    64 KiB, 358 -> 2.1 us at 64 MiB. RULES.md's figures (~6-10 us of CPU plus
    the memset, 328 us at 1 GiB) agree. On the CPU (`benchmarks/alloc_cpu.py`,
    2-core EPYC, torch 2.13): 0.5 us at 64 KiB, 8 us at 1 MiB. One-time
    allocations (`__init__`, module level, set-up) gain nothing measurable and
    are reported as low value.

    ## References
    - vLLM #26680, #42988, ray #56882, FBGEMM #6257: kept changes of this kind.
    - vLLM #45739, #37442 -> #38359, #31928, #46489 / #47029; sglang #1782,
      #2048; transformers #45050, #48205; FBGEMM #5754: reverted or refused
      ones, which this rule's proof obligation is designed to reject.
    - https://pytorch.org/docs/stable/generated/torch.empty.html
    """

    code = "OPT101"
    name = "zeros-to-empty"
    summary = "torch.zeros -> torch.empty where every element is provably overwritten before it is read"
    language = "python"
    default_tier = "safe"
    tags = ("performance", "memory")
    trigger_words = ("zeros",)

    VALID = [
        # Partial write: the untouched elements must stay zero.
        "import torch\ndef f(n, v):\n    x = torch.zeros(n)\n    x[0] = v\n    return x\n",
        # numpy is not torch.
        "import numpy as np\ndef f(n):\n    x = np.zeros(n)\n    x[:] = 1\n    return x\n",
        # A shadowed name is not torch.
        "def f(torch, n, y):\n    x = torch.zeros(n)\n    x.copy_(y)\n    return x\n",
        # Read-modify-write.
        "import torch\ndef f(n, y):\n    x = torch.zeros(n)\n    x += y\n    return x\n",
        # The write is inside a loop that may run zero times.
        "import torch\ndef f(n, ys):\n    x = torch.zeros(n)\n    for y in ys:\n        x.copy_(y)\n    return x\n",
        # Written in one branch only.
        "import torch\ndef f(n, y, c):\n    x = torch.zeros(n)\n    if c:\n        x.copy_(y)\n    return x\n",
        # An exception before the write is caught, and the handler falls through to the read.
        "import torch\ndef f(n, y):\n    try:\n        x = torch.zeros(n)\n        check(y)\n        x.copy_(y)\n"
        "    except ValueError:\n        pass\n    return x\n",
        # A context manager that may swallow the exception.
        "import contextlib, torch\ndef f(n, y):\n    x = torch.zeros(n)\n    with contextlib.suppress(ValueError):\n"
        "        check(y)\n        x.copy_(y)\n    return x\n",
        # `break` skips the write; the zeros leave the loop.
        "import torch\ndef f(n, y, c):\n    for _ in range(2):\n        x = torch.zeros(n)\n        if c:\n"
        "            break\n        x.copy_(y)\n    return x\n",
    ]
    INVALID = [
        Example(
            "import torch\ndef f(y):\n    x = torch.zeros(y.shape, dtype=y.dtype)\n    x.copy_(y)\n    return x\n",
            "import torch\ndef f(y):\n    x = torch.empty(y.shape, dtype=y.dtype)\n    x.copy_(y)\n    return x\n",
        ),
        Example(
            "import torch as t\ndef f(y):\n    x = t.zeros_like(y)\n    x[:] = y * 2\n    return x\n",
            "import torch as t\ndef f(y):\n    x = t.empty_like(y)\n    x[:] = y * 2\n    return x\n",
        ),
        Example(
            "from torch import zeros\ndef f(n, y):\n    x = zeros(n)\n    x.fill_(y)\n    return x\n",
            "from torch import empty, zeros\ndef f(n, y):\n    x = empty(n)\n    x.fill_(y)\n    return x\n",
        ),
        Example(
            "import torch\ndef f(y, c):\n    x = y.new_zeros(y.shape)\n    if c:\n        x.fill_(1)\n    else:\n        x.copy_(y)\n    return x\n",
            "import torch\ndef f(y, c):\n    x = y.new_empty(y.shape)\n    if c:\n        x.fill_(1)\n    else:\n        x.copy_(y)\n    return x\n",
        ),
    ]

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files that call something spelled like an allocation (`zeros` in a comment or a string is not one)."""
        return bool(_allocations(calls))

    @classmethod
    def needs(cls, calls: CallIndex) -> list[ast.AST]:
        """The allocations, and what `check` looks up elsewhere in the module.

        Allocations: every call spelled `zeros`, `zeros_like` or `new_zeros`,
        or a name `from torch import zeros as z` binds, except those whose
        verdict their `ast` settles (`_judged_alone`: a result passed,
        returned or stored straight away). Elsewhere: the
        `self.<name>.copy_(...)` calls that `_attribute_writer` looks for in
        the class, the module's own `new_zeros` methods, and every `from torch
        import`, whose count `_rewrite_edits` needs.
        """
        writers = [call for call in calls.named("copy_") if _on_self(call.func)]
        allocations = [call for call in _allocations(calls) if _judged_alone(calls, call) is None]
        return [*allocations, *writers, *calls.functions.get("new_zeros", ()), *calls.torch_imports]

    @classmethod
    def resolved_in_stubs(cls, calls: CallIndex) -> set[str]:
        """The root names of the allocations' callees: `_check_stubbed` resolves those of the sites judged
        alone through the module's bindings (all of them here: the cheaper question, and a superset)."""
        return {root for root in map(root_name, (call.func for call in _allocations(calls))) if root is not None}

    def check(self, module: PythonModule) -> Iterator[Finding]:
        self.facts = _ModuleFacts.gather(module)
        spellings = _spellings(module.text(alias.asname.name) for node in self.facts.torch_imports for alias in node.names
                               if alias.asname and module.text(alias.name) in _REPLACEMENT)
        for call in self.facts.calls:
            func = call.func
            if (func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None) not in spellings:
                continue  # the calls `_allocations` gives `needs` and `screen`: no other can be an allocation
            kind = self._allocation_kind(module, call)
            if kind is not None:
                yield self._examine(module, call, kind)
        if module.outlined:
            yield from self._check_stubbed(module)

    def _check_stubbed(self, module: PythonModule) -> Iterator[Finding]:
        """The allocations in functions the outline stubbed, judged from the screen's `ast`.

        `needs` left their functions out only because `_judged_alone` settles
        their verdict without them: the same keep, at the same place, with
        the same context, that `_examine` gives on libcst's tree of the
        whole module (tests/python/test_python_outline.py holds the two to
        the same findings).
        """
        calls = module.screen
        for call in _allocations(calls):
            if not module.stubbed(call):
                continue
            judged = _judged_alone(calls, call)
            if judged is None:
                raise AssertionError(f"L{call.lineno}: the outline stubbed an allocation that needs its function")
            if not self._allocation_kind_alone(module, calls, call):
                continue
            reason = judged.reason.format(module.ast_text(judged.callee) if judged.callee else "")
            yield self.keep(module, module.ast_start(call), reason=reason, category=judged.category,
                            context=ast_context(judged.ancestors))

    def _allocation_kind_alone(self, module: PythonModule, calls: CallIndex, call: ast.Call) -> bool:
        """`_allocation_kind` for a call `_judged_alone` accepted: no name of its callee is bound in its function."""
        func = call.func
        if type(func) is ast.Attribute and func.attr == "new_zeros":
            return "new_zeros" not in calls.functions  # the receiver names no import (`_judged_alone`)
        return module.callee_in_a_function_refers_to(ast_dotted_name(func), _TORCH_ZEROS) is not None

    # -- recognising the allocation ---------------------------------------------------

    def _allocation_kind(self, module: PythonModule, call: cst.Call) -> str | None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "new_zeros":
            receiver_names = module.qualified_names(func.value)
            if any(not name.startswith("torch") and module.is_import(func.value) for name in receiver_names):
                return None  # np.new_zeros and friends: not a tensor method
            if "new_zeros" in self.facts.function_names:
                return None  # the project's own `new_zeros`: the receiver may not be a tensor
            return "new_zeros"
        if isinstance(func, (cst.Attribute, cst.Name)):
            name = module.refers_to(func, _TORCH_ZEROS)
            if name:
                return name.rsplit(".", 1)[1]
        return None

    # -- the verdict ----------------------------------------------------------------------

    def _examine(self, module: PythonModule, call: cst.Call, kind: str) -> Finding:
        context = module.context(call)
        if keyword_arg(call, "out") is not None:
            return self._keep(module, call, context, *FILLS_OUT)
        star = self.facts.star_import
        if isinstance(call.func, cst.Name) and star:
            return self._keep(module, call, context, f"`{star}` may rebind `{call.func.value}`: it may not be torch's",
                              KeepCategory.NOT_TORCH)
        allocation = _moved_result(module, call)
        parent = module.parent(allocation)
        target = _bound_target(parent, allocation)
        if target is None:
            return self._keep(module, call, context, *_unbound_reason(module, parent))
        if isinstance(target, cst.Attribute):
            return self._examine_attribute(module, call, kind, parent, target, context)
        if not isinstance(target, cst.Name):
            return self._keep(module, call, context, *UNPACKED)
        proof = prove_full_overwrite(module, parent, target.value)
        if proof.proven:
            return self._fix(module, call, kind, context, Tier.SAFE, _proof_reason(target.value, proof), proof.steps)
        prefix_writer = _prefix_copy_pattern(module, parent, target.value)
        if prefix_writer is not None and not self._always_keep(module, call, target.value):
            reason = (
                f"every use of `{target.value}` is a prefix slice, first filled by {prefix_writer}; "
                "whether later reads stay inside the written prefix cannot be proven statically"
            )
            return self._fix(module, call, kind, context, Tier.VALIDATE, reason, proof.steps)
        assert proof.blocker is not None
        always = self._always_keep(module, call, target.value)
        reason = f"L{proof.blocker.line}: {proof.blocker.text}" + (f" ({always[0]})" if always else "")
        category = always[1] if always else proof.blocker.category or KeepCategory.OTHER
        return self._keep(module, call, context, reason, category, proof.steps + [proof.blocker])

    def _examine_attribute(self, module, call, kind, statement, target: cst.Attribute, context) -> Finding:
        owner = target.value
        if not (isinstance(owner, cst.Name) and owner.value == "self"):
            return self._keep(module, call, context, *ANOTHER_OBJECT)
        attribute = target.attr.value
        always = self._always_keep(module, call, attribute)
        if always:
            return self._keep(module, call, context, f"attribute buffer `self.{attribute}`: {always[0]}", always[1])
        writer = _attribute_writer(module, call, attribute)
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
        """RULES.md's "Always keep" cases, recognised by their usual shapes: why, and which."""
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

    def _fix(self, module, call, kind, context, tier: Tier, reason: str, steps: list[Step]) -> Finding:
        edits = _rewrite_edits(module, call, kind, self.facts.torch_imports)
        if isinstance(edits, str):
            return self._keep(module, call, context, edits, KeepCategory.CANNOT_SPELL, steps)
        impact, basis = _impact(call, kind, context)
        start, end = module.span(call)
        return self.fix(
            module, module.start(call), reason=reason, tier=tier, edits=edits, context=context, impact=impact, basis=basis,
            replacement=preview(module.source.text, start, end, edits), proof=[f"L{s.line}: {s.text}" for s in steps],
        )

    def _keep(self, module, call, context, reason: str, category: KeepCategory, steps: list[Step] = ()) -> Finding:
        return self.keep(module, module.start(call), reason=reason, category=category, context=context,
                         proof=[f"L{s.line}: {s.text}" for s in steps])


# -- helpers (module level: they need no rule state) -----------------------------------------


def _moved_result(module: PythonModule, call: cst.Call) -> cst.Call:
    """`torch.zeros(n).cuda()` / `.to(d)`: the moved result is as fresh as the zeros, and holds their values."""
    node = call
    while True:
        attribute = module.parent(node)
        outer = module.parent(attribute) if attribute is not None else None
        if not (isinstance(attribute, cst.Attribute) and attribute.attr.value in ("to", "cuda")
                and isinstance(outer, cst.Call) and outer.func is attribute):
            return node
        node = outer


def _bound_target(parent: cst.CSTNode | None, call: cst.Call) -> cst.BaseExpression | None:
    if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
        return parent.targets[0].target
    if isinstance(parent, cst.AnnAssign) and parent.value is call:
        return parent.target
    return None


# Why an allocation is kept whatever follows it, and which kind of use that is; `_unbound_reason` and
# `_judged_alone` say the same.
FILLS_OUT = ("`out=` fills an existing tensor, which may be read elsewhere", KeepCategory.OUT_TARGET)
RETURNED = ("returned to the caller, who may read the zeros", KeepCategory.RETURNED)
PASSED = ("passed straight to `{}(...)`, which may read it", KeepCategory.PASSED)
USED_THROUGH = ("used at once through `.{}`", KeepCategory.READ_BEFORE_WRITE)
SEVERAL_NAMES = ("assigned to several names at once", KeepCategory.STORED)
IN_AN_EXPRESSION = ("used directly in an expression, not bound to a local name", KeepCategory.READ_BEFORE_WRITE)
ANOTHER_OBJECT = ("stored on another object, which other code may read", KeepCategory.STORED)
UNPACKED = ("the result is unpacked or stored, not bound to one name", KeepCategory.STORED)


def _unbound_reason(module: PythonModule, parent: cst.CSTNode | None) -> tuple[str, KeepCategory]:
    if isinstance(parent, cst.Return):
        return RETURNED
    if isinstance(parent, cst.Arg):
        call = module.parent(parent)
        return PASSED[0].format(module.text(call.func) if isinstance(call, cst.Call) else "a call"), PASSED[1]
    if isinstance(parent, cst.Attribute):
        return USED_THROUGH[0].format(parent.attr.value), USED_THROUGH[1]
    if isinstance(parent, cst.Assign):
        return SEVERAL_NAMES
    return IN_AN_EXPRESSION


class _Judged(NamedTuple):
    reason: str  # with `{}` for the callee's text when `callee` is set
    category: KeepCategory
    callee: ast.expr | None
    ancestors: list[ast.AST]  # the allocation's, up to its outermost function: its context


def _judged_alone(calls: CallIndex, call: ast.Call) -> _Judged | None:
    """The keep `_examine` gives this allocation, when the call and its parents settle it; else None.

    The verdict needs nothing else of its function when the result is not
    bound to one local name or to `self.<name>` (those need the proof, or
    the class): it is passed, returned, stored elsewhere or used at once.
    Whether the call is torch's at all is then a question for the module's
    bindings alone, provided nothing inside its function binds the
    callee's name (`_allocation_kind_alone`); a `new_zeros` receiver must
    name no import anywhere. Module- and class-level sites, star imports
    with a bare name, and shapes with no simple `ast` counterpart (a
    decorator, a class's bases) are left to libcst's tree.
    """
    function = calls.outermost_function(call)
    if function is None:
        return None
    func = call.func
    if type(func) is ast.Attribute and func.attr == "new_zeros":
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
    result, at = call, 0  # `_moved_result`: `torch.zeros(n).cuda()` is as fresh as the zeros
    while (type(ancestors[at]) is ast.Attribute and ancestors[at].attr in ("to", "cuda")
           and type(ancestors[at + 1]) is ast.Call and ancestors[at + 1].func is ancestors[at]):
        result, at = ancestors[at + 1], at + 2
    parent = ancestors[at]
    owner = ancestors[at + 1] if at + 1 < len(ancestors) else None
    kind = type(parent)
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
        return _Judged(USED_THROUGH[0].format(parent.attr), USED_THROUGH[1], None, ancestors)
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


def _prefix_copy_pattern(module: PythonModule, statement, name: str) -> str | None:
    """`buf[:n].copy_(src)` first, and every later use a prefix slice `buf[:m]`."""
    function = module.enclosing_function(statement)
    if function is None:
        return None
    uses = [
        node for node in walk(function.body)
        if type(node) is cst.Name and node.value == name and module.start(node) > module.start(statement)
        and not _is_attribute_name(module, node)
    ]
    if not uses:
        return None
    for use in uses:
        subscript = module.parent(use)
        if not (isinstance(subscript, cst.Subscript) and subscript.value is use and _is_prefix(subscript)):
            return None
    first = module.parent(uses[0])
    attribute = module.parent(first)
    call = module.parent(attribute)
    if isinstance(attribute, cst.Attribute) and attribute.attr.value == "copy_" and isinstance(call, cst.Call):
        return f"`{module.text(call)}` (L{module.start(call)[0]})"
    return None


def _attribute_writer(module: PythonModule, call: cst.Call, attribute: str) -> str | None:
    """A `self.<attribute>.copy_(...)` or `self.<attribute>[:n].copy_(...)` somewhere in the class."""
    cls = module.enclosing(call, cst.ClassDef)
    if cls is None:
        return None
    for node in walk(cls.body):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "copy_"):
            continue
        receiver = node.func.value
        if isinstance(receiver, cst.Subscript) and _is_prefix(receiver):
            receiver = receiver.value
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == attribute and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            return f"`{module.text(node)}` (L{module.start(node)[0]})"
    return None


def _allocations(calls: CallIndex) -> list[ast.Call]:
    """The calls `_allocation_kind` may accept: by their last name, or a name `from torch import zeros as z` binds."""
    return calls.named(*_spellings(
        alias.asname for statement in calls.torch_imports for alias in statement.names
        if alias.asname and alias.name in _REPLACEMENT
    ))


def _spellings(aliases) -> set[str]:
    """The last names an allocation's callee may have: `zeros`, `zeros_like`, `new_zeros` and their import aliases."""
    return set(_REPLACEMENT).union(aliases)


def _on_self(func: ast.expr) -> bool:
    """`self.<name>.copy_` or `self.<name>[...].copy_`: the `ast` shapes `_attribute_writer` may accept."""
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if isinstance(receiver, ast.Subscript):
        receiver = receiver.value
    return isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self"


def _is_prefix(subscript: cst.Subscript) -> bool:
    """`x[:n]` or `x[:]`: a slice of the leading dimension that starts at 0."""
    if len(subscript.slice) != 1:
        return False
    index = subscript.slice[0].slice
    return isinstance(index, cst.Slice) and index.lower is None and index.step is None


def _rewrite_edits(module: PythonModule, call: cst.Call, kind: str, torch_imports: list[cst.ImportFrom]) -> list[Edit] | str:
    """The edits that turn this allocation into `empty`, or why it cannot be spelled."""
    new_name = _REPLACEMENT[kind]
    func = call.func
    if isinstance(func, cst.Attribute):
        return [module.replace(func.attr, new_name)]
    # A bare name from `from torch import zeros [as z]`: import `empty` beside it.
    if re.search(rf"\b{new_name}\b", module.source.text):
        return f"called as a bare name and `{new_name}` is already used in this file: cannot add `from torch import {new_name}` safely"
    imports = [
        node for node in torch_imports
        if any((alias.asname.name.value if alias.asname else module.text(alias.name)) == func.value for alias in node.names)
    ]
    if len(imports) != 1:
        return f"cannot find the one `from torch import` that binds `{func.value}`"
    return [*add_import_name(module, imports[0], new_name), module.replace(func, new_name)]


def _impact(call: cst.Call, kind: str, context: Context) -> tuple[Impact, str]:
    if context is Context.ONCE:
        return Impact.LOW, ONCE_BASIS
    pinned = keyword_arg(call, "pin_memory")
    if pinned is not None and is_true(pinned.value):
        return Impact.MEDIUM, PINNED_BASIS
    device = keyword_arg(call, "device")
    if kind == "zeros" and device is None:
        return Impact.LOW, CPU_BASIS + " (no device=: the default device, usually the CPU)"
    if device is not None and (string_value(device.value) or "").startswith("cpu"):
        return Impact.LOW, CPU_BASIS
    return Impact.MEDIUM, CUDA_BASIS


@dataclass
class _ModuleFacts:
    """What the rule needs from the whole module, gathered in one walk (libcst walks are not cheap)."""

    calls: list[cst.Call] = field(default_factory=list)
    function_names: set[str] = field(default_factory=set)
    torch_imports: list[cst.ImportFrom] = field(default_factory=list)  # `from torch import a, b as c`
    star_import: str | None = None  # the first `from ... import *`: any bare name may come from it

    @classmethod
    def gather(cls, module: PythonModule) -> "_ModuleFacts":
        facts = cls()
        for node in walk(module.tree):  # exact types: isinstance on libcst's ABCs dominated this loop
            kind = type(node)
            if kind is cst.Call:
                facts.calls.append(node)
            elif kind is cst.FunctionDef:
                facts.function_names.add(node.name.value)
            elif kind is cst.ImportFrom:
                if isinstance(node.names, cst.ImportStar):
                    facts.star_import = facts.star_import or " ".join(module.text(node).split())
                elif node.module is not None and module.text(node.module) == "torch":  # `from . import x` has none
                    facts.torch_imports.append(node)
        return facts


def _in_test(module: PythonModule, call: cst.Call) -> bool:
    """Inside a test function or a Test* class: its buffers are compared against references."""
    for scope in module.ancestors(call):
        if isinstance(scope, cst.FunctionDef) and scope.name.value.startswith("test"):
            return True
        if isinstance(scope, cst.ClassDef) and scope.name.value.startswith("Test"):
            return True
    return False


def _is_attribute_name(module: PythonModule, node: cst.Name) -> bool:
    parent = module.parent(node)
    return (isinstance(parent, cst.Attribute) and parent.attr is node) or (
        isinstance(parent, cst.Arg) and parent.keyword is node
    )

