"""FullOverwriteProof: is every element of a fresh local tensor written before it is read?

This is the proof obligation of OPT101 (docs/rules/OPT101.md). From the statement that
binds the allocation, every control-flow path is followed to the first
statement that touches the name's values. The proof holds when that
statement overwrites all of them on every path (`copy_`, `fill_`, a full
slice assignment, `out=` of an op that writes its whole output, a plain
reassignment), with only metadata uses (`x.shape`, `x.size()`, `len(x)`, ...)
before it. Anything else is a blocking use, reported with its line, and the
site is kept.

The paths include the ones that are easy to forget: `break` and `continue`
(also from inside an `if` that never names the tensor, or from a `finally`),
the next iteration of a loop (its `while` test included), a loop's `else`
that `break` skips, and exceptions: an exception raised before the write
may land in a handler that falls through, or in a `with` whose context
manager suppresses it, and the code after it then sees the tensor unwritten.
When in doubt the analysis keeps: a write inside a loop that may run zero
times, or in one branch only, proves nothing.

A full overwrite may also be assembled from parts: partial writes on one
straight line of code whose regions together cover the tensor (regions.py:
`x[:h] = a` then `x[h:] = b`, `x[:, 0::2]` and `x[:, 1::2]`, the targets of
one tuple assignment), and a loop `for i in range(n): x[i] = ...` whose `n`
is the size of the dimension it indexes (so that a loop running zero times
leaves nothing unwritten: the tensor is then empty). Writes through a view
of the whole buffer count in full (`x.view(s).copy_(y)`, `x.data.normal_()`,
`x.reshape(-1)[:] = v` where the allocation is contiguous), as do the
`torch.nn.init` functions and `out=` of an operator that PyTorch's schemas
say writes its whole result (out_ops.py). What the allocation spells about
its shape (`Shape`) supplies the sizes these proofs compare with; a loop's
count may also be a twin's size (`len(a)` of another allocation of the
same size just before, `_is_twin_size`). Collectives write their output
(`COLLECTIVE_OUTPUTS`), and list collectives every tensor of their output
list: a list of fresh allocations (`Tracked.elements`), or views that cover
the tracked tensor (`COVERING_VIEWS`, bound to a name only when the next
statement gives them to the collective: `_Pending`); an asynchronous
collective writes once the `wait()` of its handle returns, when nothing
names the tensor or the handle before (`_Pending` too). A full-write method
chained on the allocation itself needs no walk (`prove_chained_overwrite`).

The proof follows a local name, or `self.<attribute>` assigned in
`__init__` (`Tracked`): there every use of `self` that could reach the
attribute (a method call, `self` passed on, `super()`) counts as a read,
and the attribute outlives the function, so a path that ends unwritten is
a blocking use. `nn.Module` registrations with a literal name other than
the attribute's read nothing of it (`REGISTRATIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

import libcst as cst

from optpatch.analysis.out_ops import out_ops
from optpatch.analysis.regions import END, LAST, START, SYMBOL, ZERO, AxisSize, Axis, Bound, Region, covers
from optpatch.analysis.torch_values import assigned_value
from optpatch.model import KeepCategory
from optpatch.python_frontend import PythonModule, walk
from optpatch.python_scope import full_name_of

_DECLARATIONS = frozenset({cst.Global, cst.Nonlocal})
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})

METADATA_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "layout", "is_cuda", "is_cpu", "is_sparse", "is_quantized", "is_meta", "itemsize",
     "requires_grad", "is_leaf", "nbytes"}
)
METADATA_METHODS = frozenset(
    {"size", "dim", "numel", "nelement", "stride", "element_size", "is_contiguous", "get_device", "ndimension",
     "is_floating_point", "is_complex", "is_signed", "data_ptr"}
)
# `x.new_zeros(...)` and friends take only the receiver's dtype and device.
METADATA_CONSTRUCTORS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
# Factories and builtins that take only a tensor's metadata from their first argument (`input=` for the factories).
METADATA_FUNCTIONS = frozenset(
    {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.rand_like", "torch.randn_like",
     "torch.randint_like", "builtins.len", "builtins.isinstance", "builtins.type", "builtins.id"}
)
# In-place methods that assign every element of their receiver.
FULL_WRITE_METHODS = frozenset(
    {"copy_", "fill_", "zero_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_",
     "geometric_", "log_normal_", "cauchy_"}
)
# Synchronous collectives that write every element of their output tensor (`async_op=True` writes it later):
# name -> (the output's keyword names, how many positional arguments may come before `async_op`, the position of
# `group`). The output is the first argument. `deepspeed.comm` mirrors `torch.distributed` and forwards to it.
# A rank outside the `group` given returns at once and writes nothing (torch warns): a group the program keeps (an
# attribute, a module's or a local's: its own data-parallel group) is taken to hold this rank, one the function's
# caller passes in is not (composer's `all_gather(tensor, group=None)` serves any group).
_COLLECTIVES = {
    "all_gather_into_tensor": (frozenset({"output_tensor"}), 3, 2),
    "all_gather_single": (frozenset({"output_tensor"}), 3, 2),  # its new name (torch 2.13)
    "reduce_scatter_tensor": (frozenset({"output", "output_tensor"}), 4, 3),
    "reduce_scatter_single": (frozenset({"output"}), 4, 3),
    "reduce_scatter": (frozenset({"output"}), 4, 3),
    "all_to_all_single": (frozenset({"output"}), 2, 4),  # and no split sizes: an uneven split may leave rows unwritten
    "scatter": (frozenset({"tensor"}), 4, 3),
    "recv": (frozenset({"tensor"}), 4, 2),
}
# Synchronous collectives that write every tensor of their output list, each as in the list form of the
# tensor collective: name -> (the list's keyword names, positional arguments before `async_op`, the position of
# `group`). Never `gather` (its list is written on the destination rank only).
_LIST_COLLECTIVES = {
    "all_gather": (frozenset({"tensor_list"}), 3, 2),
    "all_to_all": (frozenset({"output_tensor_list"}), 3, 2),
}
_COLLECTIVE_MODULES = ("torch.distributed", "torch.distributed.distributed_c10d", "deepspeed.comm")
COLLECTIVE_OUTPUTS = {f"{module}.{name}": facts for module in _COLLECTIVE_MODULES for name, facts in _COLLECTIVES.items()}
COLLECTIVE_LIST_OUTPUTS = {
    f"{module}.{name}": facts for module in _COLLECTIVE_MODULES for name, facts in _LIST_COLLECTIVES.items()
}
# Views that together cover every element of the tensor they cut (`torch.chunk(x, n)`, `x.split(s)`, ...): a list of
# them that a list collective writes in full writes all of the tensor.
COVERING_VIEWS = frozenset({"chunk", "split", "tensor_split", "unbind"})
_COVERING_FUNCTIONS = frozenset(f"torch.{name}" for name in COVERING_VIEWS)
# `nn.Module` methods that store what they are given under a name and read no other attribute of the module.
REGISTRATIONS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
# Builtins that read their arguments and change none of them: a size expression passed to one keeps its value.
READING_CALLS = frozenset(
    "builtins." + name
    for name in ("len", "int", "float", "min", "max", "abs", "round", "range", "isinstance", "divmod", "enumerate", "zip",
                 "sum", "sorted", "reversed", "list", "tuple", "any", "all", "bool", "str", "repr")
)
# What reaches memory beyond a view: its storage, or a new view with strides of its own.
_STORAGE_ACCESS = frozenset({"as_strided", "as_strided_", "storage", "untyped_storage", "set_", "resize_", "resize_as_"})
# `torch.nn.init` functions that assign every element of their first argument (a zero-element tensor has none).
INIT_FUNCTIONS = frozenset(
    "torch.nn.init." + name
    for name in (
        "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
        "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    )
)
# Views that reach every element of the tensor they are taken of, whatever its strides.
WHOLE_VIEW_METHODS = frozenset(
    {"view", "view_as", "unsqueeze", "squeeze", "t", "transpose", "permute", "swapaxes", "swapdims", "movedim", "unflatten",
     "detach"}
)
WHOLE_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT"})
# Views only when the tensor is contiguous (otherwise a copy, and a write into it is lost).
CONTIGUOUS_VIEW_METHODS = frozenset({"reshape", "reshape_as", "flatten", "ravel", "contiguous"})
# Context managers whose __exit__ never swallows an exception: their block is straight-line code.
NON_SUPPRESSING_MANAGERS = frozenset(
    {
        "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
        "torch.autograd.grad_mode.no_grad", "torch.autograd.no_grad", "torch.autocast", "torch.amp.autocast",
        "torch.cuda.amp.autocast", "torch.cpu.amp.autocast", "torch.cuda.stream", "torch.cuda.device",
        "torch.device", "torch.random.fork_rng", "torch.autograd.profiler.record_function",
        "torch.profiler.record_function", "torch.cuda.nvtx.range", "contextlib.nullcontext", "builtins.open",
    }
)
# Calls that can read any local variable by its name.
INTROSPECTION_CALLS = frozenset(
    {
        "builtins.locals", "builtins.vars", "builtins.eval", "builtins.exec", "builtins.breakpoint",
        "sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.trace", "pdb.set_trace",
    }
)
_INTROSPECTION_NAMES = frozenset(name.rpartition(".")[2] for name in INTROSPECTION_CALLS)
_VIEW_METHODS = frozenset(
    {"view", "narrow", "reshape", "view_as", "as_strided", "select", "unsqueeze", "transpose", "t", "permute", "flatten",
     "expand", "chunk", "split", "unbind"}
)
_LOOPS = (cst.For, cst.While)
_TRIES = (cst.Try, cst.TryStar)
_BLOCK_OWNERS = (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.Match, cst.FunctionDef, cst.ClassDef, cst.Module)
_CLAUSE_ROLES = {
    cst.Else: "orelse", cst.ExceptHandler: "handler", cst.ExceptStarHandler: "handler", cst.Finally: "finally",
    cst.MatchCase: "case",
}


@dataclass
class Step:
    line: int
    text: str
    on_path: bool = False  # the text already says which path reaches this step
    category: KeepCategory | None = None  # set on a blocking use: what kind of use it is
    writes: bool = False  # the step overwrites every element (or the value dies): what the proof rests on
    fills: bool = False  # the step writes every element into the buffer (not a reassignment or `del`)
    zeroes: bool = False  # the write stores zeros (`zero_()`, `fill_(0)`, `x[:] = 0`): the allocation's own values

    def reached(self, path: "Via | None") -> "Step":
        """This step, saying it is reached only along `path` (e.g. when a loop runs zero times).

        A use reached only that way is blocking because of the path (the
        loop that may not run), so the path's category replaces the use's.
        """
        if path is None or self.on_path:
            return self
        return Step(self.line, f"{self.text}, reached {path.text}", True, path.category)


@dataclass(frozen=True)
class Tracked:
    """What the proof follows: a local name, or `self.<name>` assigned in `__init__`.

    `elements`: the name holds a list of fresh allocations (`[torch.zeros(s) for _ in range(n)]`); the proof
    then follows every tensor in it, which only the output list of a list collective writes in full.
    """

    name: str
    attribute: bool = False
    elements: bool = False

    @property
    def spelled(self) -> str:
        return f"self.{self.name}" if self.attribute else self.name


@dataclass(frozen=True)
class Shape:
    """What the allocation's call spells about the tensor it makes.

    `sizes`: one size expression per dimension when the call lists them
    (`zeros(a, b)`, `zeros((a, b))`); a single size argument that is not a
    literal tuple (`zeros(n)`) gives one entry with `rank_known` false, since
    `n` may be a tuple: it then stands for the first dimension only where the
    code uses it as an integer (a slice bound, `range(n)`), which would raise
    otherwise. `contiguous`: fresh memory in the default layout, so that
    `reshape` and `flatten` of it are views.
    """

    sizes: tuple[cst.BaseExpression, ...] = ()
    rank_known: bool = False
    contiguous: bool = False


@dataclass(frozen=True)
class Via:
    """A special path that leaves the name untouched: a loop that runs zero times, a false condition, an exception."""

    text: str
    category: KeepCategory


@dataclass
class PathResult:
    """What the paths through some code do with the name.

    `blocked`: a path reads or leaks it first. `open`: a path reaches the end
    untouched. `loop_exit`: a path leaves via break/continue untouched.
    `via`: when the only open paths are special ones (a loop that runs zero
    times, an exception swallowed), which; `explain` says so at the blocker.
    """

    blocked: Step | None = None
    open: bool = True
    loop_exit: bool = False
    steps: list[Step] = field(default_factory=list)
    via: Via | None = None
    pending: "_Pending | None" = None  # a write begun that a later statement completes


@dataclass
class OverwriteProof:
    proven: bool
    steps: list[Step]
    blocker: Step | None = None

    def summary(self) -> str:
        if not self.proven:
            assert self.blocker
            return f"L{self.blocker.line}: {self.blocker.text}"
        writes = [s for s in self.steps if s.writes]
        if writes:
            return "; ".join(f"L{s.line}: {s.text}" for s in writes)
        inside = [s for s in self.steps if s.fills]
        if inside:
            return "no path reads the zeros: " + "; ".join(f"L{s.line}: {s.text}" for s in inside)
        return "the value is never read"

    @property
    def fills(self) -> bool:
        """Some path writes into the buffer: without one, the allocation's value is never used at all."""
        return any(step.fills for step in self.steps)

    @property
    def zeroed_again(self) -> list[Step]:
        """The writes, when every one that fills the buffer stores zeros again: the zeros were right, the write is
        what gains nothing."""
        writes = [step for step in self.steps if step.writes and step.fills]
        return writes if writes and all(step.zeroes for step in writes) else []


class _Use:
    METADATA, WRITE, DEAD, BLOCK, PART, PENDING = "metadata", "write", "dead", "block", "part", "pending"


class _Effect(NamedTuple):
    """What one use (or one statement) does to the tracked tensor."""

    kind: str  # a `_Use`
    text: str = ""
    category: KeepCategory | None = None  # for BLOCK
    regions: tuple[Region, ...] = ()  # for PART: the elements written
    symbols: tuple[cst.BaseExpression, ...] = ()  # for PART: the bounds whose value the proof assumes unchanged
    pending: "_Pending | None" = None  # for PENDING: what completes the write
    zeroes: bool = False  # for WRITE: the value written is zero


class _Pending(NamedTuple):
    """A write begun and not yet complete: `name` holds views that cover the tensor, which a synchronous list
    collective must write (`parts = list(x.chunk(n))`), or, when `waits`, the handle of an asynchronous collective
    that has written it once `name.wait()` returns. Until then no statement may name the tensor or `name`; `step`
    is the blocker when one does, or when the code ends first."""

    name: str
    waits: bool
    step: Step | None = None


class _Collective(NamedTuple):
    """A collective call whose output is the tracked tensor (or list): its name, and whether `async_op=True`."""

    name: str
    asynchronous: bool
    grouped: bool = False  # given a `group` its caller chose: on a rank outside it the call writes nothing


_K = KeepCategory
_METADATA = _Effect(_Use.METADATA)


# What an expression allocates, as `Shape`, when it is an allocation the rule knows (`torch.zeros(n, d)`); else None.
ShapeOf = Callable[[cst.BaseExpression], "Shape | None"]


def prove_full_overwrite(
    module: PythonModule, statement: cst.BaseSmallStatement, target: Tracked, shape: Shape = Shape(),
    shape_of: ShapeOf | None = None,
) -> OverwriteProof:
    """Follow every path from `statement` (which binds `target`) to the first touch of its values.

    `shape_of` recognises the allocations of other local names, whose sizes
    may stand for this one's (`_is_twin_size`).
    """
    return _Prover(module, target, shape, shape_of).prove(statement)


# Chained on an allocation, these write every element of it (`zero_()` and `fill_(0)`: zeros again, `zeroed_again`).
CHAINED_FULL_WRITES = FULL_WRITE_METHODS


def prove_chained_overwrite(module: PythonModule, value: cst.BaseExpression) -> OverwriteProof | None:
    """`torch.zeros(n).fill_(v)`, `x.new_zeros(s).normal_()`: a full-write method called on the allocation itself.

    Nothing else holds the fresh tensor, so nothing can read it first, and
    the call's arguments cannot name it: the proof is the call. The method
    draws as many random numbers from the same generator whatever the
    tensor held, so `empty` plus the same call gives the same values.
    """
    attribute = module.parent(value)
    call = module.parent(attribute) if isinstance(attribute, cst.Attribute) else None
    if not (isinstance(call, cst.Call) and call.func is attribute and attribute.value is value
            and attribute.attr.value in CHAINED_FULL_WRITES):
        return None
    method = attribute.attr.value
    text = f"overwritten in full at once by `.{method}(...)`, called on the allocation itself"
    return OverwriteProof(True, [Step(module.start(call)[0], text, writes=True, fills=True, zeroes=_zeroes(method, call))])


class _Prover:
    def __init__(self, module: PythonModule, target: Tracked, shape: Shape, shape_of: ShapeOf | None = None):
        self.module = module
        self.target = target
        self.name = target.spelled
        self.shape = shape
        self.shape_of = shape_of
        self.statement: cst.CSTNode | None = None  # the allocation
        self.scope: cst.FunctionDef | None = None
        self._functions: frozenset[str] | None = None

    # -- the walk upwards from the allocation ----------------------------------

    def prove(self, statement: cst.BaseSmallStatement) -> OverwriteProof:
        scope = self.module.enclosing(statement, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        if not isinstance(scope, cst.FunctionDef):
            where = (
                "a class attribute, read wherever the class is used" if scope
                else "a module-level name, which any code run before the write may read"
            )
            return OverwriteProof(False, [], Step(self._line(statement), f"`{self.name}` is not a local variable: it is {where}",
                                                  category=_K.STORED))
        self.statement, self.scope = statement, scope
        early = self._scope_blocker(scope)
        if early:
            return OverwriteProof(False, [], early)
        result = self._scan(self._items_after(statement))
        item = self._item_of(statement)
        while not result.blocked:
            owner, role = self._owner(item)
            if owner is scope:
                if result.open and self.target.attribute:
                    result.blocked = Step(self._line(owner), f"`{self.name}` outlives {owner.name.value}(): other methods "
                                          "may read what this one leaves unwritten", category=_K.ATTRIBUTE_BUFFER).reached(result.via)
                elif result.open:
                    result.steps.append(Step(self._line(owner), f"`{self.name}` dies at the end of {owner.name.value}()"))
                break
            result = self._leave(owner, role, item, result)
            item = owner
        if result.blocked:
            return OverwriteProof(False, result.steps, result.blocked)
        return OverwriteProof(True, result.steps)

    def _leave(self, owner: cst.CSTNode, role: str, item: cst.CSTNode, inner: PathResult) -> PathResult:
        """The paths that leave `role` of `owner` with the name possibly untouched, followed onwards.

        Called for every enclosing statement, even when no normal path is
        left open: an exception raised before the write still travels up to
        the nearest `try` or `with` that may swallow it.
        """
        if isinstance(owner, _LOOPS) and role == "body":
            return self._leave_loop_body(owner, item, inner)
        if isinstance(owner, _TRIES):
            return self._leave_try(owner, role, inner)
        if isinstance(owner, cst.With) and self._may_suppress(owner):
            via = inner.via if inner.open else self._suppressed(owner)
            inner = PathResult(open=True, loop_exit=inner.loop_exit, steps=inner.steps + [self._may_suppress_step(owner)], via=via)
        after = self._scan(self._items_after(owner), inner.via) if inner.open else PathResult(open=False)
        return _chain(inner, after)

    def _leave_loop_body(self, loop: cst.For | cst.While, item: cst.CSTNode, inner: PathResult) -> PathResult:
        if not (inner.open or inner.loop_exit):
            return PathResult(open=False, steps=inner.steps)
        back = self._loop_back(loop, item)
        if back:
            return PathResult(blocked=back, steps=inner.steps)
        # The last iteration's value leaves the loop: through its `else`, or past it by `break`.
        orelse = self._items_of_block(loop.orelse.body) if loop.orelse else []
        via = inner.via if inner.open else Via(f"when `break` or `continue` leaves the loop at L{self._line(loop)} before the write", _K.LOOP)
        exits = [self._scan(orelse + self._items_after(loop), via)]
        if orelse:
            exits.append(self._scan(self._items_after(loop), Via(f"when `break` skips the `else` of the loop at L{self._line(loop)}", _K.LOOP)))
        return _chain(PathResult(open=True, steps=inner.steps), _join(exits))

    def _leave_try(self, node: cst.Try | cst.TryStar, role: str, inner: PathResult) -> PathResult:
        after = self._items_after(node)
        if role == "finally":
            # `finally` may run on the way out of a `break` or `continue` in the try: that jump resumes after it.
            pending = [node.body, *node.handlers, node.orelse]
            result = _chain(inner, self._scan(after, inner.via) if inner.open else PathResult(open=False))
            result.loop_exit = result.loop_exit or (inner.open and any(part is not None and _jumps_out_of_loop(part) for part in pending))
            return result
        final = self._items_of_block(node.finalbody.body) if node.finalbody else []
        if node.finalbody and self._mentions(node.finalbody):
            return PathResult(
                blocked=Step(
                    self._line(node.finalbody),
                    f"`{self.name}` is used in `finally`, which also runs when an exception cuts the code before the write short",
                    category=_K.EXCEPTION_PATH,
                ),
                steps=inner.steps,
            )
        # An exception swallowed by `break`/`continue` in `finally` leaves the loop untouched.
        loop_exit = inner.loop_exit or self._scan(final).loop_exit
        if role != "body":  # a handler or the `else`: its exceptions are not caught by this try
            result = _chain(inner, self._scan(final + after, inner.via) if inner.open else PathResult(open=False))
            result.loop_exit = result.loop_exit or loop_exit
            return result
        blocker = self._exception_path_blocker(node)
        if blocker:
            return PathResult(blocked=blocker, steps=inner.steps)
        orelse = self._items_of_block(node.orelse.body) if node.orelse else []
        paths = [self._scan(orelse + final + after, inner.via)] if inner.open else []
        handlers = [self._scan(self._items_of_block(handler.body)) for handler in node.handlers]
        if any(handler.open for handler in handlers):
            caught = self._scan(final + after, self._caught(node))
            caught.steps.insert(0, Step(self._line(node), "an exception raised before the write may be caught here and fall through"))
            paths.append(caught)
        loop_exit = loop_exit or any(handler.loop_exit for handler in handlers)
        result = _chain(PathResult(open=True, steps=inner.steps), _join(paths)) if paths else PathResult(open=False, steps=inner.steps)
        result.loop_exit = result.loop_exit or loop_exit
        return result

    def _loop_back(self, loop: cst.For | cst.While, item: cst.CSTNode) -> Step | None:
        """Next iteration: only safe if the allocation is re-run before any use of the name."""
        body = self._items_of_block(loop.body)
        if item not in body:
            return Step(self._line(loop), "the value may reach the next iteration of the loop", category=_K.LOOP)
        if not isinstance(item, cst.BaseSmallStatement):
            return Step(self._line(item), "allocated conditionally inside a loop: the next iteration may use the old value",
                        category=_K.LOOP)
        header = loop.test if isinstance(loop, cst.While) else loop.target
        if self._mentions(header):
            return Step(self._line(loop), f"the loop header uses `{self.name}` before the next iteration re-allocates it",
                        category=_K.LOOP)
        if self._reads_name(getattr(item, "value", None)):
            return Step(self._line(item), f"the next iteration's allocation reads the old `{self.name}`: {self._code(item)}",
                        category=_K.LOOP)
        for earlier in body[: body.index(item)]:
            if self._mentions(earlier):
                return Step(self._line(earlier), f"the next loop iteration uses `{self.name}` before re-allocating it",
                            category=_K.LOOP)
        return None

    # -- scanning statements forward -------------------------------------------

    def _scan(self, items: list[cst.CSTNode], via: Via | None = None) -> PathResult:
        """Straight-line code entered along `via` (the plain path when empty).

        Partial writes on this line accumulate in `parts`; once they cover
        the tensor, the statement that completed them is the full write. A
        line that reads the tensor, or ends, with part of it unwritten is
        blocked at its first partial write.
        """
        result = PathResult(via=via)
        parts = _Parts()
        pending: _Pending | None = None
        for item in items:
            step = self._continue_pending(item, pending, parts) if pending else self._scan_item(item, parts)
            pending = step.pending
            result.steps.extend(step.steps)
            result.loop_exit = result.loop_exit or step.loop_exit
            if step.blocked:
                result.blocked = (parts.first or step.blocked).reached(result.via)
                return result
            if not step.open:
                result.open = False
                return result
            result.via = result.via or step.via
        if pending is not None:
            result.blocked = pending.step.reached(result.via)
        elif parts.first is not None:
            result.blocked = parts.first.reached(result.via)
        return result

    def _continue_pending(self, item: cst.CSTNode, pending: _Pending, parts: "_Parts") -> PathResult:
        """A statement after a write was begun: code that names neither the tensor nor `pending.name` is scanned as
        usual, the write still on its way; the statement that completes the write (`_completion`) ends the path;
        any other use of either may read or write part of the tensor before the write lands."""
        if not self._mentions(item) and not any(True for _ in _names(self.module, item, pending.name)):
            result = self._scan_item(item, parts)
            result.pending = pending
            return result
        written = self._completion(item, pending)
        return PathResult(open=False, steps=[written]) if written else PathResult(blocked=pending.step)

    def _completion(self, item: cst.CSTNode, pending: _Pending) -> Step | None:
        """`handle.wait()` for an asynchronous collective, or a synchronous list collective whose output is the list
        of views `pending.name` (nothing else naming it or the tensor): the full write; else None."""
        if not (isinstance(item, cst.Expr) and isinstance(item.value, cst.Call)) or self._mentions(item):
            return None
        call, name, code = item.value, pending.name, self._code(item)
        if pending.waits:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "wait" and isinstance(func.value, cst.Name) \
                    and func.value.value == name and not any(True for arg in call.args for _ in _names(self.module, arg, name)):
                return Step(self._line(item), f"overwritten in full once {code} returns (the asynchronous collective it waits for "
                            "writes the whole output)", writes=True, fills=True)
            return None
        outputs = [arg for arg in call.args if isinstance(arg.value, cst.Name) and arg.value.value == name]
        if len(outputs) != 1 or any(True for arg in call.args if arg is not outputs[0] for _ in _names(self.module, arg, name)):
            return None
        collective = self._collective_output(outputs[0], call, COLLECTIVE_LIST_OUTPUTS)
        if collective is None or collective.asynchronous or collective.grouped:
            return None
        text = f"overwritten in full by {code}: the synchronous collective writes every view in `{name}`, and they cover `{self.name}`"
        return Step(self._line(item), text, writes=True, fills=True)

    def _scan_item(self, item: cst.CSTNode, parts: "_Parts") -> PathResult:
        if isinstance(item, cst.BaseSmallStatement):
            return self._scan_small(item, parts)
        if not self._mentions(item):
            # Compound code that never names it leaves it untouched, but may still jump out of the loop.
            return PathResult(open=True, loop_exit=_jumps_out_of_loop(item))
        if isinstance(item, cst.If):
            return self._scan_if(item)
        if isinstance(item, cst.For):
            written = self._loop_writes_all(item)
            if written is not None:
                return PathResult(open=False, steps=[written]) if written.writes else PathResult(blocked=written)
        if isinstance(item, _LOOPS):
            return self._scan_loop(item)
        if isinstance(item, cst.With):
            return self._scan_with(item)
        if isinstance(item, _TRIES):
            return self._scan_try(item)
        if isinstance(item, (cst.FunctionDef, cst.ClassDef)):
            return PathResult(blocked=Step(self._line(item), f"captured by the nested {self._kind(item)} here", category=_K.CAPTURED))
        return PathResult(blocked=Step(self._line(item), f"used in a `{type(item).__name__.lower()}` statement", category=_K.OTHER))

    def _scan_small(self, statement: cst.BaseSmallStatement, parts: "_Parts") -> PathResult:
        line = self._line(statement)
        if not self._mentions(statement):
            if isinstance(statement, cst.Return) and self.target.attribute:
                return PathResult(blocked=Step(line, f"returns with `{self.name}` unwritten: other methods may read it",
                                               category=_K.ATTRIBUTE_BUFFER))
            if isinstance(statement, (cst.Return, cst.Raise)):
                return PathResult(open=False, steps=[Step(line, f"path ends ({self._code(statement)}) before any read")])
            if isinstance(statement, (cst.Break, cst.Continue)):
                return PathResult(open=False, loop_exit=True)
            return PathResult(open=True)
        effect = self._classify(statement)
        if effect.kind == _Use.BLOCK:
            return PathResult(blocked=Step(line, effect.text, category=effect.category))
        if effect.kind in (_Use.WRITE, _Use.DEAD):
            step = Step(line, effect.text, writes=True, fills=effect.kind == _Use.WRITE, zeroes=effect.zeroes)
            return PathResult(open=False, steps=[step])
        if effect.kind == _Use.PENDING:
            pending = effect.pending
            blocker = (f"{effect.text}; but `{pending.name}` or `{self.name}` is used, or the code ends, first"
                       if pending.waits else f"{effect.text}, not written in full by a list collective before another use")
            step = Step(line, blocker, category=_K.READ_BEFORE_WRITE if pending.waits else _K.VIEW_TAKEN)
            return PathResult(open=True, steps=[Step(line, effect.text)], pending=pending._replace(step=step))
        if effect.kind == _Use.PART:
            step = Step(line, effect.text, category=_K.PARTIAL_WRITE)
            completed = parts.add(step, effect, statement, self)
            first = self.module.span(parts.statement)[0]
            if completed and self._stable(parts.symbols, first, self.module.span(statement)[1]):
                lines = ", ".join(f"L{part.line}" for part in parts.steps)
                text = f"overwritten in full by the partial writes at {lines}, which together cover `{self.name}`"
                return PathResult(open=False, steps=[Step(line, text, writes=True, fills=True)])
            return PathResult(open=True, steps=[Step(line, f"part of it written: {self._code(statement)}")])
        steps = [Step(line, effect.text or f"metadata only: {self._code(statement)}")]
        ends = isinstance(statement, (cst.Return, cst.Raise))
        return PathResult(open=not ends, steps=steps)

    def _scan_if(self, node: cst.If) -> PathResult:
        blocker = self._expression_blocker(node.test)
        if blocker:
            return PathResult(blocked=blocker)
        branches = [self._scan(self._items_of_block(node.body))]
        if isinstance(node.orelse, cst.If):
            branches.append(self._scan_if(node.orelse))
        elif isinstance(node.orelse, cst.Else):
            branches.append(self._scan(self._items_of_block(node.orelse.body)))
        else:  # no else: the test may be false
            branches.append(PathResult(open=True, via=Via(f"when the condition at L{self._line(node)} is false", _K.PARTIAL_WRITE)))
        joined = _join(branches)
        if joined.open and not all(branch.open for branch in branches):
            open_branches = [branch for branch in branches if branch.open]
            joined.via = open_branches[0].via if len(open_branches) == 1 and open_branches[0].via else (
                Via(f"through a branch of the `if` at L{self._line(node)} that does not write it", _K.PARTIAL_WRITE)
            )
        return joined

    def _scan_loop(self, node: cst.For | cst.While) -> PathResult:
        header = [node.iter, node.target] if isinstance(node, cst.For) else [node.test]
        for part in header:
            blocker = self._expression_blocker(part)
            if blocker:
                return PathResult(blocked=blocker)
        body = self._scan(self._items_of_block(node.body))
        if body.blocked:
            return body
        tail = self._scan(self._items_of_block(node.orelse.body)) if node.orelse else PathResult()
        if tail.blocked:
            return tail
        # Whatever the body writes, the loop may run zero times: the name is still untouched.
        # A `break` in the loop's `else` leaves the enclosing loop.
        note = Step(self._line(node), "note: a write inside this loop proves nothing (it may run zero times)")
        via = None if body.open else Via(f"when the loop at L{self._line(node)} runs zero times", _K.LOOP)
        # The writes inside still use the buffer when the loop runs: the allocation is not dead (`OverwriteProof.fills`).
        inside = [Step(step.line, f"written inside the loop: {step.text}", fills=True) for step in body.steps + tail.steps
                  if step.fills]
        return PathResult(open=True, loop_exit=tail.loop_exit, steps=[*inside, note], via=via)

    def _scan_with(self, node: cst.With) -> PathResult:
        for with_item in node.items:
            blocker = self._expression_blocker(with_item)
            if blocker:
                return PathResult(blocked=blocker)
        body = self._scan(self._items_of_block(node.body))
        if not body.blocked and self._may_suppress(node):
            body.via = body.via if body.open else self._suppressed(node)
            body.open = True
            body.steps.append(self._may_suppress_step(node))
        return body

    def _scan_try(self, node: cst.Try | cst.TryStar) -> PathResult:
        blocker = self._exception_path_blocker(node)
        if blocker:
            return PathResult(blocked=blocker)
        body = self._scan(self._items_of_block(node.body))
        if body.blocked:
            return body
        # An exception before the write may land in a handler that falls through, or jumps out of the loop.
        handlers = [self._scan(self._items_of_block(h.body)) for h in node.handlers]
        final = self._scan(self._items_of_block(node.finalbody.body)) if node.finalbody else PathResult()
        if not body.open and any(h.open for h in handlers):
            body.open, body.via = True, self._caught(node)
        body.loop_exit = (
            body.loop_exit or any(h.loop_exit for h in handlers) or final.loop_exit
            or (node.orelse is not None and _jumps_out_of_loop(node.orelse))
        )
        return body

    def _may_suppress_step(self, node: cst.With) -> Step:
        return Step(self._line(node), f"the context manager may suppress an exception raised before the write: {self._code(node.items[0])}")

    def _suppressed(self, node: cst.With) -> Via:
        return Via(f"when the context manager at L{self._line(node)} suppresses an exception raised before the write",
                   _K.EXCEPTION_PATH)

    def _caught(self, node: cst.Try | cst.TryStar) -> Via:
        return Via(f"when an exception raised before the write is caught at L{self._line(node)} and the handler falls through",
                   _K.EXCEPTION_PATH)

    def _exception_path_blocker(self, node: cst.Try | cst.TryStar) -> Step | None:
        for part in [*node.handlers, node.orelse, node.finalbody]:
            if part is not None and self._mentions(part):
                return Step(self._line(part), f"`{self.name}` is used on an exception path of this try", category=_K.EXCEPTION_PATH)
        return None

    def _may_suppress(self, node: cst.With) -> bool:
        """True unless every context manager is one known to let exceptions propagate."""
        for with_item in node.items:
            manager = with_item.item
            func = manager.func if isinstance(manager, cst.Call) else manager
            if self.module.refers_to(func, NON_SUPPRESSING_MANAGERS) is None:
                return True
        return False

    # -- one statement ------------------------------------------------------------

    def _classify(self, statement: cst.BaseSmallStatement) -> _Effect:
        """The effect of one simple statement on the tensor: its first blocking use, its write, its partial writes."""
        uses = list(self._uses(statement))
        write: _Effect | None = None
        described = _METADATA
        parts: list[_Effect] = []
        for use in uses:
            effect = self._classify_use(use, statement)
            if effect.kind == _Use.BLOCK:
                return effect
            if effect.kind in (_Use.WRITE, _Use.DEAD, _Use.PENDING):
                write = effect
            elif effect.kind == _Use.PART:
                parts.append(effect)
            elif effect.text:
                described = effect  # a use that reads nothing, said why
        if write is not None:
            return write
        if parts:
            return _Effect(_Use.PART, parts[0].text, _K.PARTIAL_WRITE, tuple(r for p in parts for r in p.regions),
                           tuple(s for p in parts for s in p.symbols))
        return described

    def _classify_use(self, use: cst.CSTNode, statement: cst.BaseSmallStatement) -> _Effect:
        if self._is_metadata_use(use):
            return _METADATA
        module = self.module
        code = self._code(statement)
        if type(use) is not cst.Attribute and self.target.attribute:  # `self` itself, or `super()`
            if self._is_registration(use):
                return _Effect(_Use.METADATA, f"reads nothing of `{self.name}`: {code} stores what it is given under "
                               "another name")
            return _Effect(_Use.BLOCK, f"may read `{self.name}` through `self`: {code}", _K.PASSED)
        if self.target.elements:
            effect = self._classify_element_use(use, statement, code)
            if effect is not None:
                return effect
        covering = self._covering_list(use)
        if covering is not None:
            return self._classify_covering(covering, statement, code)
        view, through = self._whole_view(use)
        if view is not use:
            return self._classify_whole_view(view, through, statement, code)
        parent = module.parent(use)
        grand = module.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is use:
            attribute = parent.attr.value
            if isinstance(grand, cst.Call) and grand.func is parent:
                if attribute in FULL_WRITE_METHODS:
                    return self._method_write(grand, attribute, statement, code, f"overwritten in full by {code}")
                return _Effect(_Use.BLOCK, *self._method_blocker(attribute, code))
            return _Effect(_Use.BLOCK, f"`{self.name}.{attribute}` reads or aliases it: {code}", _K.READ_BEFORE_WRITE)
        if isinstance(parent, cst.Subscript) and parent.value is use:
            return self._classify_subscript(parent, statement, code)
        if isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, (cst.Tuple, cst.List, cst.Element)) and self._is_assign_target(parent)
        ):
            if self._reads_name(statement.value):
                return _Effect(_Use.BLOCK, f"reads `{self.name}` to compute its new value: {code}", _K.READ_BEFORE_WRITE)
            return _Effect(_Use.DEAD, f"reassigned by {code}: the zeros were never read")
        if isinstance(parent, cst.AnnAssign) and parent.target is use:
            if parent.value is None:
                return _METADATA
            if self._reads_name(parent.value):
                return _Effect(_Use.BLOCK, f"reads `{self.name}` to compute its new value: {code}", _K.READ_BEFORE_WRITE)
            return _Effect(_Use.DEAD, f"reassigned by {code}: the zeros were never read")
        if isinstance(parent, cst.AugAssign) and parent.target is use:
            return _Effect(_Use.BLOCK, f"read-modify-write: {code}", _K.READ_MODIFY_WRITE)
        if isinstance(parent, cst.Del) or (isinstance(parent, cst.Element) and isinstance(statement, cst.Del)):
            return _Effect(_Use.DEAD, f"deleted by {code}: the zeros were never read")
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            return self._classify_argument(use, parent, grand, statement, code)
        out = self._out_tuple(use)
        if out is not None:
            return self._classify_out(use, *out, statement, code)
        if isinstance(parent, cst.Return):
            return _Effect(_Use.BLOCK, f"returned to the caller, who may read it: {code}", _K.RETURNED)
        if isinstance(parent, cst.Yield):
            return _Effect(_Use.BLOCK, f"yielded to the caller, who may read it: {code}", _K.RETURNED)
        return _Effect(_Use.BLOCK, f"read or stored: {code}", _K.READ_BEFORE_WRITE)

    def _method_write(self, call: cst.Call, method: str, statement, code: str, text: str) -> _Effect:
        """`<tensor or view>.copy_(src)` and the other full-write methods, as the whole statement."""
        if not self._is_whole_statement(call, statement):
            return _Effect(_Use.BLOCK, f"the result of `.{method}(...)` is used, so it escapes: {code}", _K.STORED)
        if any(self._reads_name(arg.value) for arg in call.args):
            return _Effect(_Use.BLOCK, f"reads `{self.name}` while writing it: {code}", _K.READ_BEFORE_WRITE)
        return _Effect(_Use.WRITE, text, zeroes=_zeroes(method, call))

    def _classify_subscript(self, subscript: cst.Subscript, statement, code: str) -> _Effect:
        parent = self.module.parent(subscript)
        grand = self.module.parent(parent) if parent is not None else None
        written = self._index_write(subscript)
        if self._is_assign_target(subscript) and isinstance(statement, cst.Assign):
            if len(statement.targets) != 1:
                return _Effect(_Use.BLOCK, f"chained assignment: {code}", _K.OTHER)
            if self._reads_name(statement.value):
                return _Effect(_Use.BLOCK, f"reads `{self.name}` while writing it: {code}", _K.READ_BEFORE_WRITE)
            effect = self._region_write(written, code)
            return effect._replace(zeroes=effect.kind == _Use.WRITE and _is_zero(statement.value))
        if isinstance(parent, cst.AugAssign) and parent.target is subscript:
            return _Effect(_Use.BLOCK, f"read-modify-write: {code}", _K.READ_MODIFY_WRITE)
        if (isinstance(parent, cst.Attribute) and parent.value is subscript and parent.attr.value in FULL_WRITE_METHODS
                and isinstance(grand, cst.Call) and grand.func is parent and written is not None):
            # `x[:h].copy_(a)`: a basic index is a view, so the method writes those elements of `x`.
            effect = self._method_write(grand, parent.attr.value, statement, code, "")
            return self._region_write(written, code) if effect.kind == _Use.WRITE else effect
        if isinstance(parent, cst.Attribute):
            return _Effect(_Use.BLOCK, f"a slice or view of it is used (writes through a view are partial): {code}", _K.VIEW_TAKEN)
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "out":
            return _Effect(_Use.BLOCK, f"`out=` is a slice of it, written only in part: {code}", _K.PARTIAL_WRITE)
        return _Effect(_Use.BLOCK, f"reads its elements: {code}", _K.READ_BEFORE_WRITE)

    def _region_write(self, written: "_IndexWrite | None", code: str) -> _Effect:
        if written is None:
            return _Effect(_Use.BLOCK, f"partial write (only the indexed elements): {code}", _K.PARTIAL_WRITE)
        if written.region is None:
            return _Effect(_Use.WRITE, f"overwritten in full by {code}")
        return _Effect(_Use.PART, f"partial write (only the indexed elements): {code}", _K.PARTIAL_WRITE,
                       (written.region,), written.symbols)

    def _classify_argument(self, use: cst.CSTNode, arg: cst.Arg, call: cst.Call, statement, code: str) -> _Effect:
        if arg.keyword is not None and arg.keyword.value == "out":
            return self._classify_out(use, call, 1, statement, code)
        if self._init_target(arg, call):
            return self._init_write(call, statement, code)
        effect = self._collective_write(arg, call, statement, code, f"overwritten in full by {code}", COLLECTIVE_OUTPUTS)
        if effect is not None:
            return effect
        callee = self.module.text(call.func)
        return _Effect(_Use.BLOCK, f"passed to `{callee}(...)`, which may read it: {code}", _K.PASSED)

    def _init_target(self, arg: cst.Arg, call: cst.Call) -> bool:
        """`arg` is the tensor a `torch.nn.init` function fills: its first positional argument, or `tensor=`."""
        if arg.star:
            return False
        positional = [a for a in call.args if a.keyword is None]
        first = arg.keyword.value == "tensor" if arg.keyword is not None else bool(positional) and positional[0] is arg
        return first and self.module.refers_to(call.func, INIT_FUNCTIONS) is not None

    def _collective_output(self, arg: cst.Arg, call: cst.Call, collectives: dict) -> _Collective | None:
        """The collective when `arg` is the output of a call of one of `collectives` (`COLLECTIVE_OUTPUTS`, or
        `COLLECTIVE_LIST_OUTPUTS` for an output list), synchronous or with `async_op=True` spelled out."""
        name = self.module.refers_to(call.func, collectives.keys())
        if name is None or arg.star:
            return None
        keywords, before_async, group_at = collectives[name]
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args) or len(positional) > before_async:
            return None
        output = arg.keyword.value in keywords if arg.keyword is not None else bool(positional) and positional[0] is arg
        async_op = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "async_op"), None)
        spelled = async_op.value if isinstance(async_op, cst.Name) and async_op.value in ("True", "False") else None
        if not output or async_op is not None and spelled is None:
            return None
        splits = [a.value for a in call.args if a.keyword is not None and a.keyword.value.endswith("split_sizes")]
        if any(not (isinstance(value, cst.Name) and value.value == "None") for value in splits):
            return None
        group = positional[group_at].value if group_at < len(positional) else next(
            (a.value for a in call.args if a.keyword is not None and a.keyword.value == "group"), None)
        return _Collective(name, spelled == "True", self._callers_group(group))

    def _callers_group(self, group: cst.BaseExpression | None) -> bool:
        """GROUP is a parameter of the function (its caller chooses it) and the allocation is not sized by it.

        Sized by it (`range(group.size())`, `dist.get_world_size(group)`), a rank outside the group makes
        nothing to read: `get_world_size` gives it -1 (an empty list, or a negative size that raises), and
        `new_group` gives it no group object to call `.size()` on.
        """
        if not isinstance(group, cst.Name) or group.value == "None":
            return False
        if not any(isinstance(getattr(binding, "node", None), cst.Param) for binding in self.module.bindings(group) or ()):
            return False
        return not (self.statement is not None and self._sized_by(group, self.statement))

    def _sized_by(self, group: cst.Name, statement: cst.CSTNode, depth: int = 0) -> bool:
        """STATEMENT reads the size of GROUP: `group.size()`, `get_world_size(group)`, or a name bound once to one."""
        for node in walk(statement):
            if isinstance(node, cst.Name) and depth == 0 and node is not group and self._bound_to_size(node, group):
                return True
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "size" and not node.args and _same(self.module, func.value, group):
                return True
            if isinstance(func, (cst.Attribute, cst.Name)) and (func.attr if isinstance(func, cst.Attribute) else func).value \
                    == "get_world_size" and any(_same(self.module, arg.value, group) for arg in node.args):
                return True
        return False

    def _bound_to_size(self, name: cst.Name, group: cst.Name) -> bool:
        """NAME has one binding in the function, `name = <the size of GROUP>` (`dp_size = dist.get_world_size(dp_group)`)."""
        bindings = [getattr(binding, "node", None) for binding in self.module.bindings(name) or ()]
        if len(bindings) != 1 or not isinstance(bindings[0], cst.Name):
            return False
        value = assigned_value(self.module, bindings[0])
        return value is not None and self._sized_by(group, value, 1)

    def _collective_write(self, arg: cst.Arg, call: cst.Call, statement, code: str, text: str,
                          collectives: dict) -> _Effect | None:
        """`arg` is the output of one of `collectives`: the write, begun when `async_op=True` (complete at the
        `wait()` of the handle the statement binds), or why it is not one; None when the call is no such collective."""
        collective = self._collective_output(arg, call, collectives)
        if collective is None:
            return None
        name = collective.name
        if any(self._reads_name(other.value) for other in call.args if other is not arg):
            return _Effect(_Use.BLOCK, f"`{self.name}` is both input and output of `{name}`: {code}", _K.OUT_TARGET)
        if collective.grouped:
            return _Effect(_Use.BLOCK, f"`{name}` is given the `group` this function's caller passes: on a rank outside "
                           f"it the call returns without writing: {code}", _K.PASSED)
        if not collective.asynchronous:
            if not self._is_whole_statement(call, statement):
                return _Effect(_Use.BLOCK, f"the result of `{name}(...)` is used, so it escapes: {code}", _K.STORED)
            return _Effect(_Use.WRITE, f"{text} (the output of a synchronous `{name}`)")
        handle = _bound_name(statement, call)
        if handle is None:
            return _Effect(_Use.BLOCK, f"written by an asynchronous `{name}` whose handle is not kept in a name, so "
                           f"its wait() is not seen: {code}", _K.READ_BEFORE_WRITE)
        return _Effect(_Use.PENDING, f"{text} once `{handle}.wait()` returns (an asynchronous `{name}`)",
                       pending=_Pending(handle, waits=True))

    def _classify_element_use(self, use: cst.CSTNode, statement, code: str) -> _Effect | None:
        """A use of a list of fresh tensors (`Tracked.elements`): the output list of a synchronous list collective
        writes every tensor in it; a rebinding or `del` is left to `_classify_use` (None); anything else may read them."""
        module = self.module
        parent = module.parent(use)
        grand = module.parent(parent) if parent is not None else None
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or isinstance(parent, cst.AnnAssign) and parent.target is use \
                or isinstance(parent, (cst.Tuple, cst.List, cst.Element)) and (self._is_assign_target(parent)
                                                                               or isinstance(statement, cst.Del)):
            return None
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            text = f"every tensor in `{self.name}` overwritten in full by {code}"
            effect = self._collective_write(parent, grand, statement, code, text, COLLECTIVE_LIST_OUTPUTS)
            if effect is not None:
                return effect
        return _Effect(_Use.BLOCK, f"the list `{self.name}` is used before a collective writes its tensors: {code}",
                       _K.READ_BEFORE_WRITE)

    def _covering_list(self, use: cst.CSTNode) -> cst.Call | None:
        """`list(x.chunk(n))`, `list(torch.split(x, s))` and the other COVERING_VIEWS of the tracked `x`: the
        `list(...)` call, whose views together reach every element; None for any other use."""
        module = self.module
        parent = module.parent(use)
        if isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in COVERING_VIEWS:
            views, others = module.parent(parent), None
            if isinstance(views, cst.Call) and views.func is parent:
                others = views.args
        elif isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
            views, others = module.parent(parent), None
            if isinstance(views, cst.Call) and views.args and views.args[0] is parent and module.refers_to(views.func, _COVERING_FUNCTIONS):
                others = views.args[1:]
        else:
            return None
        if others is None or any(arg.star or self._reads_name(arg.value) for arg in others):
            return None
        arg = module.parent(views)
        outer = module.parent(arg) if isinstance(arg, cst.Arg) else None
        if (isinstance(outer, cst.Call) and len(outer.args) == 1 and arg.keyword is None and not arg.star
                and module.refers_to(outer.func, {"builtins.list"}) is not None):
            return outer
        return None

    def _classify_covering(self, views: cst.Call, statement, code: str) -> _Effect:
        """A list of views that cover the tensor: written in full as a list collective's output, here or (bound to
        a name) by a later statement (`_completion`); any other use may write them in part."""
        module = self.module
        parent = module.parent(views)
        grand = module.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            text = f"overwritten in full through views that cover it, by {code}"
            effect = self._collective_write(parent, grand, statement, code, text, COLLECTIVE_LIST_OUTPUTS)
            if effect is not None:
                return effect
        bound = _bound_name(statement, views)
        if bound is not None:
            return _Effect(_Use.PENDING, f"cut into views that cover it: {code}", pending=_Pending(bound, waits=False))
        return _Effect(_Use.BLOCK, f"a view of it is taken (writes through a view are partial): {code}", _K.VIEW_TAKEN)

    def _is_registration(self, use: cst.CSTNode) -> bool:
        """`self.register_buffer("b", t)` and the other REGISTRATIONS: they store `t` under the name "b" and read no
        attribute of `self`; not when the class defines the method itself, the name is not a literal other than
        the tracked attribute's, or an argument names `self`."""
        module = self.module
        parent = module.parent(use)
        call = module.parent(parent) if parent is not None else None
        if not (type(use) is cst.Name and use.value == "self" and isinstance(parent, cst.Attribute) and parent.value is use
                and parent.attr.value in REGISTRATIONS and isinstance(call, cst.Call) and call.func is parent):
            return False
        if parent.attr.value in self._class_functions or any(arg.star for arg in call.args):
            return False
        if any(type(node) is cst.Name and node.value in ("self", "super") for arg in call.args for node in walk(arg.value)):
            return False
        named = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "name"]
        positional = [arg for arg in call.args if arg.keyword is None]
        name = named[0] if named else positional[0] if positional else None
        return (name is not None and isinstance(name.value, cst.SimpleString)
                and name.value.evaluated_value != self.target.name)

    def _init_write(self, call: cst.Call, statement, code: str) -> _Effect:
        init = self.module.refers_to(call.func, INIT_FUNCTIONS)
        if not self._is_whole_statement(call, statement):
            return _Effect(_Use.BLOCK, f"the result of `{init}(...)` is used, so it escapes: {code}", _K.STORED)
        if sum(1 for _ in self._uses(call)) > 1 and any(self._reads_name(a.value) for a in call.args[1:]):
            return _Effect(_Use.BLOCK, f"reads `{self.name}` while initialising it: {code}", _K.READ_BEFORE_WRITE)
        return _Effect(_Use.WRITE, f"overwritten in full by {code} ({init} assigns every element)",
                       zeroes=init == "torch.nn.init.zeros_")

    def _out_tuple(self, use: cst.CSTNode) -> tuple[cst.Call, int] | None:
        """`op(..., out=(use, other))`: the call and the number of outputs, when `use` is one element of `out=`."""
        module = self.module
        element = module.parent(use)
        if not (isinstance(element, cst.Element) and element.value is use):
            return None
        sequence = module.parent(element)
        arg = module.parent(sequence) if isinstance(sequence, (cst.Tuple, cst.List)) else None
        call = module.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call) and arg.value is sequence and arg.keyword is not None and arg.keyword.value == "out":
            return call, len(sequence.elements)
        return None

    def _classify_out(self, use: cst.CSTNode, call: cst.Call, outputs: int, statement, code: str) -> _Effect:
        """`op(..., out=x)` or `out=(x, y)`: written in full when the op's schema has an out overload of that arity."""
        op = self.module.refers_to(call.func, out_ops().keys())
        if op is None or outputs not in out_ops()[op]:
            return _Effect(_Use.BLOCK, f"`out=` of a call not known to write its whole output: {code}", _K.OUT_TARGET)
        if not self._is_whole_statement(call, statement):
            return _Effect(_Use.BLOCK, f"the result of the `out=` call is used, so it escapes: {code}", _K.STORED)
        if sum(1 for found in self._uses(call) if not self._is_metadata_use(found)) > 1:
            return _Effect(_Use.BLOCK, f"`{self.name}` is both input and `out=`: {code}", _K.OUT_TARGET)
        return _Effect(_Use.WRITE, f"overwritten in full by {code} ({op} writes its whole `out=`, by its schema)")

    def _method_blocker(self, attribute: str, code: str) -> tuple[str, KeepCategory]:
        if attribute.endswith("_") and not attribute.startswith("_"):
            return f"in-place `{attribute}` reads before it writes, or writes only part: {code}", _K.READ_MODIFY_WRITE
        if attribute in _VIEW_METHODS:
            return f"a view of it is taken (writes through a view are partial): {code}", _K.VIEW_TAKEN
        return f"`{self.name}.{attribute}(...)` reads it: {code}", _K.READ_BEFORE_WRITE

    # -- views of the whole buffer --------------------------------------------------

    def _whole_view(self, use: cst.CSTNode) -> tuple[cst.CSTNode, str]:
        """The outermost expression around `use` that is a view of all of it (`x.view(s).t()`, `x.data`), and how."""
        module = self.module
        node, through = use, ""
        while True:
            parent = module.parent(node)
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                return node, through
            name = parent.attr.value
            if name in WHOLE_VIEW_ATTRIBUTES:
                node, through = parent, f"{through}.{name}"
                continue
            grand = module.parent(parent)
            whole = name in WHOLE_VIEW_METHODS or (name in CONTIGUOUS_VIEW_METHODS and self.shape.contiguous)
            if not (whole and isinstance(grand, cst.Call) and grand.func is parent) or any(self._reads_name(a) for a in grand.args):
                return node, through
            node, through = grand, f"{through}.{name}()"

    def _classify_whole_view(self, view: cst.CSTNode, through: str, statement, code: str) -> _Effect:
        """A use through a view of the whole buffer: a full write through it writes all of the tensor."""
        module = self.module
        parent = module.parent(view)
        grand = module.parent(parent) if parent is not None else None
        text = f"overwritten in full through `{self.name}{through}`, a view of all of it: {code}"
        if (isinstance(parent, cst.Attribute) and parent.value is view and parent.attr.value in FULL_WRITE_METHODS
                and isinstance(grand, cst.Call) and grand.func is parent):
            return self._method_write(grand, parent.attr.value, statement, code, text)
        if isinstance(parent, cst.Subscript) and parent.value is view and self._is_assign_target(parent) \
                and isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
                and all(_is_full_index(element.slice) for element in parent.slice):
            if self._reads_name(statement.value):
                return _Effect(_Use.BLOCK, f"reads `{self.name}` while writing it: {code}", _K.READ_BEFORE_WRITE)
            return _Effect(_Use.WRITE, text)
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and self._init_target(parent, grand):
            effect = self._init_write(grand, statement, code)
            return _Effect(_Use.WRITE, text) if effect.kind == _Use.WRITE else effect
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "out":
            return _Effect(_Use.BLOCK, f"`out=` is a view of it, which a resize would detach: {code}", _K.OUT_TARGET)
        return _Effect(_Use.BLOCK, f"a view of it is taken (writes through a view are partial): {code}", _K.VIEW_TAKEN)

    def _is_metadata_use(self, use: cst.CSTNode) -> bool:
        """`x.shape`, `x.size()`, `len(x)`, `x is None`, `torch.empty_like(x)`, `x.new_zeros(n)`: uses that never read an element."""
        if self.target.attribute and type(use) is not cst.Attribute:
            return False  # `self` or `super()`: what a method reads through them is unknown
        module = self.module
        parent = module.parent(use)
        grand = module.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is use:
            if parent.attr.value in METADATA_ATTRIBUTES:
                return not isinstance(grand, (cst.AssignTarget, cst.AugAssign, cst.Del))
            return (parent.attr.value in METADATA_METHODS | METADATA_CONSTRUCTORS and isinstance(grand, cst.Call)
                    and grand.func is parent)
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            if parent.star or not (parent.keyword is None and grand.args[0] is parent
                                   or parent.keyword is not None and parent.keyword.value == "input"):
                return False
            return module.refers_to(grand.func, METADATA_FUNCTIONS) is not None
        if isinstance(parent, cst.Comparison) and parent.left is use:
            return len(parent.comparisons) == 1 and isinstance(parent.comparisons[0].operator, (cst.Is, cst.IsNot))
        if isinstance(parent, cst.ComparisonTarget) and parent.comparator is use:
            comparison = module.parent(parent)
            return (
                isinstance(comparison, cst.Comparison) and len(comparison.comparisons) == 1
                and isinstance(parent.operator, (cst.Is, cst.IsNot))
            )
        return False

    def _expression_blocker(self, node: cst.CSTNode) -> Step | None:
        """Compound-statement headers may only use metadata."""
        for use in self._uses(node):
            if not self._is_metadata_use(use):
                return Step(self._line(use), f"read in a condition or header: {self.module.text(node)[:80]}", category=_K.CONDITION)
        return None

    # -- helpers ----------------------------------------------------------------------

    def _scope_blocker(self, function: cst.FunctionDef) -> Step | None:
        # Exact types, not isinstance: libcst's node classes are ABCs, whose isinstance is slow,
        # and none of these has subclasses. This loop visits every node of the function.
        for node in walk(function.body):
            kind = type(node)
            if kind in _DECLARATIONS and any(n.name.value == self.name for n in node.names):
                return Step(self._line(node), f"`{self.name}` is declared {kind.__name__.lower()}: other code may read it",
                            category=_K.CAPTURED)
            if kind in _NESTED_SCOPES and self._mentions(node):
                return Step(self._line(node), f"`{self.name}` is captured by a nested {self._kind(node)}, which may read it at any time",
                            category=_K.CAPTURED)
            if kind is cst.Call and self._may_introspect(node) and self.module.qualified_names(node.func) & INTROSPECTION_CALLS:
                return Step(self._line(node), f"{self._code(node)} can read `{self.name}` by name", category=_K.CAPTURED)
            if kind is cst.Attribute and node.attr.value == "f_locals":
                return Step(self._line(node), f"{self._code(node)} can read `{self.name}` by name", category=_K.CAPTURED)
        return None

    def _may_introspect(self, call: cst.Call) -> bool:
        """False when no meaning of the callee can be in INTROSPECTION_CALLS: its full name (python_scope's
        `full_name_of`) ends in none of their names and is no name an `import ... as` binds."""
        full_name = full_name_of(call.func)
        if full_name is None:
            return False
        return full_name.rpartition(".")[2] in _INTROSPECTION_NAMES or full_name in self.module.import_aliases

    def _reads_name(self, node: cst.CSTNode | None) -> bool:
        """True when `node` uses the name's values (metadata uses do not count)."""
        if node is None:
            return False
        return self._expression_blocker(node) is not None

    def _mentions(self, node: cst.CSTNode) -> bool:
        return any(True for _ in self._uses(node))

    def _uses(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The nodes in `node` that use the tracked tensor, in source order.

        A local: its name. `self.<name>`: that attribute, and anything else
        that may reach it (`self` passed on or bare, a method called on
        `self`, `super()`); other attributes of `self` are other objects.
        """
        if not self.target.attribute:
            yield from _names(self.module, node, self.target.name)
            return
        parent_of = self.module.parent
        found = list(_names(self.module, node, "super"))
        for name in _names(self.module, node, "self"):
            parent = parent_of(name)
            if type(parent) is cst.Attribute and parent.value is name:
                if parent.attr.value == self.target.name:
                    found.append(parent)
                else:
                    grand = parent_of(parent)
                    if type(grand) is cst.Call and grand.func is parent or parent.attr.value in self._class_functions:
                        found.append(name)  # `self.method(...)`, or a property of the class, may read the attribute
            else:
                found.append(name)
        yield from sorted(found, key=lambda use: self.module.span(use)[0]) if len(found) > 1 else found

    # -- partial writes, loops, and the values they assume unchanged -------------------------

    def _index_write(self, subscript: cst.Subscript) -> "_IndexWrite | None":
        """The elements `x[index]` names when the index is basic: all of them, or a region of one dimension.

        None when the index is not one this proof can place (an advanced
        index, a name, a negative step, several partial dimensions).
        """
        elements = [element.slice for element in subscript.slice]
        ellipses = [i for i, e in enumerate(elements) if isinstance(e, cst.Index) and isinstance(e.value, cst.Ellipsis)]
        partial = [i for i, e in enumerate(elements) if not _is_full_index(e)]
        if len(ellipses) > 1 or any(isinstance(e, cst.Index) and e.star for e in elements):
            return None
        if not partial:
            return _IndexWrite(None, ())
        if len(partial) != 1:
            return None
        position = partial[0]
        element = elements[position]
        if ellipses and ellipses[0] < position:
            axis = self._axis(Axis(True, len(elements) - position))
        else:
            axis = self._axis(Axis(False, position))
        if isinstance(element, cst.Index):
            value = _integer(element.value)
            if value is None:
                return None
            if value >= 0:
                return _IndexWrite(Region(axis, Bound(START, value), Bound(START, value + 1)), ())
            return _IndexWrite(Region(axis, Bound(END, value), Bound(END, value + 1)), ())
        step = 1 if element.step is None else _integer(element.step)
        if step is None or step < 1:
            return None
        symbols: list[tuple[cst.BaseExpression, bool]] = []
        lower = self._bound(element.lower, axis, ZERO, symbols)
        upper = self._bound(element.upper, axis, LAST, symbols)
        if lower is None or upper is None:
            return None
        return _IndexWrite(Region(axis, lower, upper, step), tuple(symbols))

    def _axis(self, axis: Axis) -> Axis:
        """Axes counted from the right become axes from the left when the rank is known."""
        if axis.from_right and self.shape.rank_known and axis.index <= len(self.shape.sizes):
            return Axis(False, len(self.shape.sizes) - axis.index)
        return axis

    def _axis_size(self, axis: Axis) -> cst.BaseExpression | None:
        sizes = self.shape.sizes
        if axis.from_right or not sizes or axis.index >= len(sizes) or (axis.index > 0 and not self.shape.rank_known):
            return None
        return sizes[axis.index]

    def _bound(self, node: cst.BaseExpression | None, axis: Axis, default: Bound,
               symbols: list[tuple[cst.BaseExpression, bool]]) -> Bound | None:
        """A slice bound as regions.py compares it; the expressions it assumes unchanged go into `symbols`."""
        if node is None:
            return default
        value = _integer(node)
        if value is not None:
            return Bound(START, value) if value >= 0 else Bound(END, value)
        if self._reads_name(node) or not self._repeatable(node):
            return None
        if self._is_axis_size(node, axis):
            size = self._axis_size(axis)
            if size is not None and _same(self.module, size, node):
                symbols.append((node, True))  # the allocation's own size expression: unchanged since then
            return LAST
        if self._is_twin_size(node, axis):
            symbols.append((self._axis_size(axis), True))  # the size both allocations spell: unchanged since then
            return LAST
        symbols.append((node, False))
        return Bound(SYMBOL, symbol=_spelling(self.module, node))

    @property
    def _class_functions(self) -> frozenset[str]:
        """The names the class around `__init__` defines with `def` (methods and properties), for `self.<name>` uses."""
        if self._functions is None:
            cls = self.module.enclosing(self.scope, cst.ClassDef) if self.scope is not None else None
            body = cls.body.body if cls is not None else ()
            self._functions = frozenset(statement.name.value for statement in body if isinstance(statement, cst.FunctionDef))
        return self._functions

    def _repeatable(self, node: cst.BaseExpression) -> bool:
        """Evaluating `node` twice gives the same value while nothing it reads changes: names, attributes, subscripts,
        arithmetic, and calls only of `len()` and the other reading builtins or metadata methods (`n.size(0)`, `t.item()`)."""
        for current in walk(node):
            kind = type(current)
            if kind is cst.Call:
                func = current.func
                if isinstance(func, cst.Attribute) and func.attr.value in METADATA_METHODS | {"item"}:
                    continue
                if self.module.refers_to(func, READING_CALLS) is None:
                    return False
            elif kind in (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.SetComp,
                          cst.DictComp):
                return False
        return True

    def _is_axis_size(self, node: cst.BaseExpression, axis: Axis) -> bool:
        """`node` is the size of `axis`: the allocation's size expression, `x.shape[k]`, `x.size(k)`, `len(x)`."""
        size = self._axis_size(axis)
        if size is not None and _same(self.module, size, node):
            return True
        measured = self._measured_axis(node)
        return measured is not None and self._axis(measured) == axis

    def _measured_axis(self, node: cst.BaseExpression) -> Axis | None:
        """The axis whose size `x.shape[k]`, `x.size(k)` or `len(x)` reads, for the tracked `x`."""
        target = self.target

        def tracked(expression) -> bool:
            if target.attribute:
                return (isinstance(expression, cst.Attribute) and expression.attr.value == target.name
                        and isinstance(expression.value, cst.Name) and expression.value.value == "self")
            return isinstance(expression, cst.Name) and expression.value == target.name

        measured = self._measure(node)
        return measured[0] if measured is not None and tracked(measured[1]) else None

    def _measure(self, node: cst.BaseExpression) -> tuple[Axis, cst.BaseExpression] | None:
        """`x.shape[k]`, `x.size(k)`, `len(x)`: the axis whose size it reads, and of what."""
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape" \
                and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            dimension, of = _integer(node.slice[0].slice.value), node.value.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size" \
                and len(node.args) == 1 and node.args[0].keyword is None:
            dimension, of = _integer(node.args[0].value), node.func.value
        elif isinstance(node, cst.Call) and len(node.args) == 1 and self.module.refers_to(node.func, {"builtins.len"}):
            dimension, of = 0, node.args[0].value
        else:
            return None
        if dimension is None:
            return None
        return (Axis(True, -dimension) if dimension < 0 else Axis(False, dimension)), of

    def _is_twin_size(self, node: cst.BaseExpression, axis: Axis) -> bool:
        """`len(a)`, `a.shape[k]`, `a.size(k)` of a twin: another local `a`, bound once in the function, by an
        allocation just before this one in the same block (`a = torch.zeros(n, d)`, `b = torch.zeros(n, d)`), whose
        size on that axis is spelled as this one's and is repeatable, with nothing between the two that may change
        it, and nothing from `a`'s allocation to `node` that may change `a`'s shape. Then `a` and the tracked tensor
        have the same size there: the loop `for i in range(len(a))` covers both."""
        measured = self._measure(node)
        size = self._axis_size(axis)
        if self.shape_of is None or self.target.attribute or measured is None or size is None:
            return False
        measured_axis, twin = measured
        if measured_axis != axis or axis.from_right or not isinstance(twin, cst.Name) or twin.value == self.name:
            return False
        binding = self._single_binding(twin.value)
        siblings = self._siblings(self.statement)
        if binding is None or binding not in siblings or siblings.index(binding) > siblings.index(self.statement):
            return False
        shape = self.shape_of(binding.value)
        if shape is None or axis.index >= len(shape.sizes) or (axis.index > 0 and not shape.rank_known):
            return False
        if not _same(self.module, shape.sizes[axis.index], size) or not self._repeatable(size):
            return False
        names = {name.value for name in walk(size) if type(name) is cst.Name}
        deep = any(type(part) in (cst.Attribute, cst.Subscript, cst.Call) for part in walk(size))
        start, allocated = self.module.span(binding)[1], self.module.span(self.statement)[1]
        return not self._changed_in(names, start, allocated, deep) and self._shape_kept(twin.value, start,
                                                                                         self.module.span(node)[0])

    def _single_binding(self, name: str) -> cst.Assign | None:
        """The one statement `name = value` that binds `name` in the function, when nothing else binds it (a
        parameter, another assignment, a nested scope, a declaration)."""
        if any(param.name.value == name for param in _parameters(self.scope.params)):
            return None
        bindings = []
        for node in walk(self.scope.body):
            kind = type(node)
            if kind in _DECLARATIONS and any(declared.name.value == name for declared in node.names):
                return None
            if kind in _NESTED_SCOPES and any(True for _ in _names(self.module, node, name)):
                return None  # its own name, or one it binds or reads
            if kind is cst.Name and node.value == name:
                parent = self.module.parent(node)
                if isinstance(parent, (cst.MatchAs, cst.MatchStar)) or self._binds(node, stores=False):
                    bindings.append(parent)
        if len(bindings) != 1 or not isinstance(bindings[0], cst.AssignTarget):
            return None
        statement = self.module.parent(bindings[0])
        return statement if isinstance(statement, cst.Assign) and len(statement.targets) == 1 else None

    def _shape_kept(self, name: str, start: int, end: int) -> bool:
        """No use of `name` between offsets `start` and `end` can change its shape: each is metadata, an index
        (`a[i] = v` writes values only), a method that makes a new tensor, or a full-write method (`a.copy_(v)`);
        not `resize_` and the other in-place methods, `a.data = t`, nor `a` passed to a call or stored."""
        module = self.module
        for node in _names(module, self.scope.body, name):
            if not start <= module.span(node)[0] < end:
                continue
            parent = module.parent(node)
            grand = module.parent(parent) if parent is not None else None
            if isinstance(parent, cst.Subscript) and parent.value is node:
                continue
            if isinstance(parent, cst.Attribute) and parent.value is node and not isinstance(grand, (cst.AssignTarget, cst.Del)):
                method = parent.attr.value
                if method in METADATA_ATTRIBUTES or method in FULL_WRITE_METHODS or not method.endswith("_") and (
                        method not in _STORAGE_ACCESS and method not in WHOLE_VIEW_ATTRIBUTES):
                    continue
            if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and (
                    module.refers_to(grand.func, READING_CALLS | METADATA_FUNCTIONS) is not None):
                continue
            return False
        return True

    def _stable(self, symbols, first: int, end: int) -> bool:
        """Every expression in `symbols` has the same value from where it is assumed (the allocation, or offset
        `first`) up to offset `end`: no name it reads is rebound there, and when it reads more than plain names
        (`len(a)`, `cfg.h`), nothing it reads is passed to a call or has a method called on it there."""
        allocation = self.module.span(self.statement)[1]
        for expression, since_allocation in symbols:
            names = {node.value for node in walk(expression) if type(node) is cst.Name}
            if not self.target.attribute:
                names.discard(self.target.name)  # the tensor's own shape does not change by writing it
            deep = any(type(node) in (cst.Attribute, cst.Subscript, cst.Call) for node in walk(expression))
            if self._changed_in(names, allocation if since_allocation else first, end, deep):
                return False
        return True

    def _changed_in(self, names: set[str], start: int, end: int, deep: bool) -> bool:
        """A name in `names` may change value between offsets `start` and `end` of the function."""
        module = self.module
        for node in walk(self.scope.body):
            if type(node) is not cst.Name or node.value not in names or not start <= module.span(node)[0] < end:
                continue
            if self._binds(node) or (deep and self._passed_or_called(node)):
                return True
        return False

    def _binds(self, name: cst.Name, stores: bool = True) -> bool:
        """`name` is assigned here: a target, a loop variable, `as`, `del`, `:=`, or (with `stores`) the base of an
        attribute or item store."""
        module = self.module
        node, parent = name, module.parent(name)
        while stores and isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is node:
            node, parent = parent, module.parent(parent)  # `a.b = v`, `a[0] = v` change what `a.b`, `a[0]` read
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)) \
                and self._is_assign_target(parent):
            return True
        if isinstance(parent, cst.AugAssign) and parent.target is node:
            return True
        if isinstance(parent, cst.AnnAssign) and parent.target is node and parent.value is not None:
            return True
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
            return True
        return isinstance(parent, (cst.AsName, cst.NamedExpr)) and getattr(parent, "name", getattr(parent, "target", None)) is node

    def _passed_or_called(self, name: cst.Name) -> bool:
        """`f(name)`, `f(name.a)`, `name.method()`, `name.a.method()`: a call that may change what `name` holds
        (not `len(name)`, `name.size(0)` and the other calls that only read)."""
        module = self.module
        node, parent = name, module.parent(name)
        while isinstance(parent, cst.Attribute) and parent.value is node:
            grand = module.parent(parent)
            if isinstance(grand, cst.Call) and grand.func is parent:
                return parent.attr.value not in METADATA_METHODS
            node, parent = parent, grand
        call = module.parent(parent) if isinstance(parent, cst.Arg) else None
        return isinstance(call, cst.Call) and module.refers_to(call.func, READING_CALLS) is None

    def _loop_writes_all(self, loop: cst.For) -> Step | None:
        """A nest of loops that writes every element (a `writes` step), or one that writes a row per iteration over a
        count not shown to be the size (a blocking step); None for any other loop: `for i in range(n): ... x[i] = v ...`, `for i, r in
        enumerate(rows): x[i] = r`, `for i in range(n): for j in range(m): x[i, j] = v`.

        Each loop runs over the size of the dimension its index indexes (the
        allocation's size expression, `x.shape[k]`, `len(x)`; `len(rows)` for
        `enumerate(rows)`, whose body must not name `rows`), so a loop that
        runs zero times leaves nothing unwritten: the tensor is then empty.
        The write is a statement of the innermost body, reached on every
        iteration (nothing before it names the tensor or jumps out of a loop),
        indexes each loop variable on one dimension and all of the others,
        and reads nothing of the tensor; each outer body touches the tensor
        only through the next loop; no loop variable is rebound. After the
        write the innermost body may read the element it wrote (`x[i]`
        again), nothing else.
        """
        module = self.module
        levels: list[_LoopLevel] = []
        bodies: list[list[cst.CSTNode]] = []
        node: cst.CSTNode = loop
        while True:
            level = self._loop_level(node)
            if level is None:
                return None
            levels.append(level)
            body = self._items_of_block(node.body)
            bodies.append(body)
            touching = [item for item in body if self._mentions(item)]
            if not touching:
                return None
            if isinstance(touching[0], cst.For) and len(touching) == 1:
                node = touching[0]
                continue
            if not isinstance(touching[0], cst.BaseSmallStatement):
                return None
            write, after = touching[0], touching[1:]
            break
        written = self._indexed_axes(write, [level.index for level in levels])
        if written is None or not all(self._rereads(item, written[1]) for item in after):
            return None
        # The costlier checks last, once the shape of the nest is right.
        for depth, (level, body) in enumerate(zip(levels, bodies)):
            if any(_jumps_out_of_loop(item) for item in body):
                return None
            # The indices of this loop and those around it (the next loop's header binds its own).
            if any(self._binds(name) for item in body for lv in levels[: depth + 1] for name in _names(module, item, lv.index)):
                return None
            if level.sequence is not None and any(True for _ in _names(module, level.loop.body, level.sequence.value)):
                return None  # the body might change what `enumerate` goes on to yield
        axes = written[0]
        symbols: list[tuple[cst.BaseExpression, bool]] = []
        over = ", ".join(f"`{level.index}` in `{self._code(level.loop.iter)[1:-1]}`" for level in levels)
        for level in levels:
            if not self._runs_over_the_size(level, axes[level.index], symbols):
                # The body writes one row per iteration: the rows past the loop's count keep their zeros.
                return Step(self._line(write), f"the loop writes {self._code(write)} for every {over}, a count not shown "
                            f"to be the size of the dimension `{level.index}` indexes (a twin's size counts when it is "
                            "allocated earlier in the same block with the same size, unchanged since)", category=_K.PARTIAL_WRITE)
        # Inner counts are evaluated again on each outer iteration: they must hold over the whole nest.
        end = module.span(loop)[1] if len(levels) > 1 else module.span(loop.iter)[1]
        if not self._stable(symbols, module.span(self.statement)[1], end):
            return Step(self._line(loop), f"the loop writes {self._code(write)} for every {over}, but a size it counts on may "
                        "change before or during it", category=_K.PARTIAL_WRITE)
        return Step(self._line(loop), f"overwritten in full by the loop: {self._code(write)} for every {over}, the size of "
                    "the dimension it indexes", writes=True, fills=True)

    def _loop_level(self, node: cst.CSTNode) -> "_LoopLevel | None":
        """`for i in range(n)` (`range(0, n)`, `range(0, n, 1)`) or `for i, _ in enumerate(seq)`, with `i` a name."""
        if not isinstance(node, cst.For) or node.asynchronous is not None or node.orelse is not None:
            return None
        module = self.module
        tracked = "self" if self.target.attribute else self.target.name
        if isinstance(node.target, cst.Name):
            count = _range_count(module, node.iter)
            if count is None or node.target.value == tracked:
                return None
            return _LoopLevel(node, node.target.value, count, None)
        target = node.target
        call = node.iter
        if not (isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(target.elements[0].value, cst.Name)
                and isinstance(call, cst.Call) and module.refers_to(call.func, {"builtins.enumerate"}) is not None):
            return None
        arguments = list(call.args)
        if not arguments or arguments[0].keyword is not None or arguments[0].star or not isinstance(arguments[0].value, cst.Name):
            return None
        if any(arg.star or _integer(arg.value) != 0 or (arg.keyword is not None and arg.keyword.value != "start")
               for arg in arguments[1:]):
            return None
        if target.elements[0].value.value == tracked or any(
            isinstance(n, cst.Name) and n.value == tracked for n in walk(target.elements[1].value)
        ):
            return None
        return _LoopLevel(node, target.elements[0].value.value, None, arguments[0].value)

    def _runs_over_the_size(self, level: "_LoopLevel", axis: Axis, symbols: list[tuple[cst.BaseExpression, bool]]) -> bool:
        """The loop's number of iterations is the size of `axis`."""
        size = self._axis_size(axis)
        if level.sequence is not None:
            name = level.sequence.value
            spelled = {f"len({name})", f"{name}.shape[0]", f"{name}.size(0)"}
            if size is None or _spelling(self.module, size) not in spelled:
                return False
            symbols.append((size, True))
            return True
        count = level.count
        constant = _integer(count)
        if constant is not None:
            return size is not None and constant == _integer(size)
        return self._bound(count, axis, ZERO, symbols) == LAST

    def _indexed_axes(self, statement: cst.BaseSmallStatement, indices: list[str]) -> tuple[dict[str, Axis], str] | None:
        """The axis each loop variable indexes in the write `x[i, :, j] = v` (or `x[i].copy_(v)`), and the spelling of
        that subscript; None unless every other index is a full slice and the value reads nothing of `x`."""
        uses = [use for use in self._uses(statement) if not self._is_metadata_use(use)]
        if len(uses) != 1:
            return None
        subscript = self.module.parent(uses[0])
        if not (isinstance(subscript, cst.Subscript) and subscript.value is uses[0]):
            return None
        elements = [element.slice for element in subscript.slice]
        ellipses = [i for i, e in enumerate(elements) if isinstance(e, cst.Index) and isinstance(e.value, cst.Ellipsis)]
        if len(ellipses) > 1:
            return None
        axes: dict[str, Axis] = {}
        for position, element in enumerate(elements):
            if isinstance(element, cst.Index) and isinstance(element.value, cst.Name) and element.value.value in indices:
                if element.value.value in axes:
                    return None
                from_right = bool(ellipses) and ellipses[0] < position
                axes[element.value.value] = self._axis(Axis(True, len(elements) - position) if from_right else Axis(False, position))
            elif not _is_full_index(element):
                return None
        if set(axes) != set(indices) or len(set(axes.values())) != len(axes):
            return None
        parent = self.module.parent(subscript)
        grand = self.module.parent(parent) if parent is not None else None
        spelled = _spelling(self.module, subscript)
        if self._is_assign_target(subscript) and isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0].target, cst.Subscript):
            return None if self._reads_name(statement.value) else (axes, spelled)
        if (isinstance(parent, cst.Attribute) and parent.attr.value in FULL_WRITE_METHODS and isinstance(grand, cst.Call)
                and grand.func is parent and self._is_whole_statement(grand, statement)):
            return axes, spelled
        return None

    def _rereads(self, item: cst.CSTNode, written: str) -> bool:
        """Every use of the tensor in `item` reads only its metadata or the element just written (`written`)."""
        for use in self._uses(item):
            if self._is_metadata_use(use):
                continue
            subscript = self.module.parent(use)
            if not (isinstance(subscript, cst.Subscript) and subscript.value is use and _spelling(self.module, subscript) == written):
                return False
            parent = self.module.parent(subscript)
            if isinstance(parent, cst.Attribute) and parent.value is subscript and (
                parent.attr.value in _STORAGE_ACCESS or parent.attr.value.startswith("_")
            ):
                return False  # the storage, or a view with strides of its own, reaches beyond the element written
        return True

    def _is_whole_statement(self, call: cst.Call, statement) -> bool:
        return isinstance(statement, cst.Expr) and statement.value is call

    def _is_assign_target(self, node: cst.CSTNode) -> bool:
        for ancestor in self.module.ancestors(node):
            if isinstance(ancestor, cst.AssignTarget):
                return True
            if not isinstance(ancestor, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
                return False
        return False

    def _items_after(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        item = self._item_of(node)
        siblings = self._siblings(item)
        return siblings[siblings.index(item) + 1 :]

    def _item_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """`node` if it is a statement in a block, else the nearest statement around it."""
        while not isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            node = self.module.parent(node)
        return node

    def _siblings(self, item: cst.CSTNode) -> list[cst.CSTNode]:
        parent = self.module.parent(item)
        if isinstance(parent, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and isinstance(item, cst.BaseSmallStatement):
            if isinstance(parent, cst.SimpleStatementSuite):
                return list(parent.body)
            block = self.module.parent(parent)
            return self._items_of_block(block)
        if isinstance(parent, cst.If) and parent.orelse is item:
            return [item]  # an elif: nothing follows it inside its own chain
        return self._items_of_block(parent)

    def _items_of_block(self, block: cst.CSTNode) -> list[cst.CSTNode]:
        body = getattr(block, "body", ())
        items: list[cst.CSTNode] = []
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                items.extend(statement.body)
            else:
                items.append(statement)
        return items

    def _owner(self, item: cst.CSTNode) -> tuple[cst.CSTNode, str]:
        """The statement whose block holds `item`, and which block: body, orelse, handler, finally or case."""
        node = item
        parent = self.module.parent(node)
        while parent is not None:
            role = _CLAUSE_ROLES.get(type(parent))
            if role is not None:
                owner = self.module.parent(parent)
                return (self._top_if(owner) if isinstance(owner, cst.If) else owner), role
            if isinstance(parent, cst.If) and parent.orelse is node:
                return self._top_if(parent), "orelse"  # the body of an elif
            if isinstance(parent, _BLOCK_OWNERS):
                return (self._top_if(parent) if isinstance(parent, cst.If) else parent), "body"
            node, parent = parent, self.module.parent(parent)
        raise AssertionError("statement outside any module")

    def _top_if(self, node: cst.If) -> cst.If:
        """The first `if` of an if/elif chain: code after the chain follows it."""
        parent = self.module.parent(node)
        while isinstance(parent, cst.If) and parent.orelse is node:
            node, parent = parent, self.module.parent(parent)
        return node

    def _line(self, node: cst.CSTNode) -> int:
        return self.module.start(node)[0]

    def _code(self, node: cst.CSTNode) -> str:
        text = " ".join(self.module.text(node).split())
        return f"`{text[:77]}...`" if len(text) > 80 else f"`{text}`"

    @staticmethod
    def _kind(node: cst.CSTNode) -> str:
        return {cst.FunctionDef: "function", cst.Lambda: "lambda", cst.ClassDef: "class"}.get(type(node), "scope")


class _LoopLevel(NamedTuple):
    """One loop of a nest: its index and what it runs over (`range(count)`, or `enumerate(sequence)`)."""

    loop: cst.For
    index: str
    count: cst.BaseExpression | None
    sequence: cst.Name | None


class _IndexWrite(NamedTuple):
    """What `x[index] = v` writes: every element (`region` None), or one region, assuming `symbols` unchanged."""

    region: Region | None
    symbols: tuple[tuple[cst.BaseExpression, bool], ...]


class _Parts:
    """The partial writes met on one straight line of code, and whether they cover the tensor yet."""

    def __init__(self):
        self.steps: list[Step] = []
        self.regions: list[Region] = []
        self.symbols: list[tuple[cst.BaseExpression, bool]] = []
        self.statement: cst.CSTNode | None = None  # the first partial write

    @property
    def first(self) -> Step | None:
        return self.steps[0] if self.steps else None

    def add(self, step: Step, effect: _Effect, statement: cst.CSTNode, prover: "_Prover") -> bool:
        """Record a partial write; True when the writes so far cover every element."""
        if self.statement is None:
            self.statement = statement
        self.steps.append(step)
        self.regions.extend(effect.regions)
        self.symbols.extend(effect.symbols)
        for axis in {region.axis for region in self.regions}:
            size = prover._axis_size(axis)
            if covers([r for r in self.regions if r.axis == axis], AxisSize(_integer(size) if size is not None else None)):
                return True
        return False


def _bound_name(statement: cst.CSTNode, value: cst.BaseExpression) -> str | None:
    """`name = value` as the whole statement: the name; else None."""
    if isinstance(statement, cst.Assign) and statement.value is value and len(statement.targets) == 1 \
            and isinstance(statement.targets[0].target, cst.Name):
        return statement.targets[0].target.value
    return None


def _zeroes(method: str, call: cst.Call) -> bool:
    """The full-write method call `x.<method>(...)` stores zeros: `zero_()`, `fill_(0)`."""
    return method == "zero_" or method == "fill_" and len(call.args) == 1 and _is_zero(call.args[0].value)


def _is_zero(node: cst.BaseExpression) -> bool:
    """A literal zero: `0`, `0.0`, `False`."""
    if isinstance(node, (cst.Integer, cst.Float)) and not node.lpar:
        return node.evaluated_value == 0
    return isinstance(node, cst.Name) and node.value == "False"


def _integer(node: cst.BaseExpression | None) -> int | None:
    """The value of an integer literal, negated or not; None for anything else."""
    if isinstance(node, cst.Integer) and not node.lpar:
        value = node.evaluated_value
        return value if isinstance(value, int) else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        value = node.expression.evaluated_value
        return -value if isinstance(value, int) else None
    return None


def _spelling(module: PythonModule, node: cst.CSTNode) -> str:
    """An expression's text with its whitespace normalised: two spellings of one expression compare equal."""
    return "".join(module.text(node).split())


def _same(module: PythonModule, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return _spelling(module, a) == _spelling(module, b)


def _parameters(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from (*params.posonly_params, *params.params, *params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            yield star


def _range_count(module: PythonModule, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`n` for `range(n)`, `range(0, n)` and `range(0, n, 1)` (the builtin), else None."""
    if not isinstance(node, cst.Call) or any(arg.keyword is not None or arg.star for arg in node.args):
        return None
    if module.refers_to(node.func, {"builtins.range"}) is None:
        return None
    values = [arg.value for arg in node.args]
    if len(values) == 1:
        return values[0]
    if len(values) in (2, 3) and _integer(values[0]) == 0 and (len(values) == 2 or _integer(values[2]) == 1):
        return values[1]
    return None


def _join(branches: list[PathResult]) -> PathResult:
    """Alternative paths: blocked if any is, open if any is (special only if every open one is)."""
    joined = PathResult(open=False)
    for branch in branches:
        joined.steps.extend(branch.steps)
        if branch.blocked and not joined.blocked:
            joined.blocked = branch.blocked
        joined.open = joined.open or branch.open
        joined.loop_exit = joined.loop_exit or branch.loop_exit
    open_branches = [branch for branch in branches if branch.open]
    if open_branches and all(branch.via for branch in open_branches):
        joined.via = open_branches[0].via
    return joined


def _chain(first: PathResult, then: PathResult) -> PathResult:
    """`then` followed after `first`'s open paths; `first`'s jumps out of loops still count."""
    return PathResult(
        blocked=then.blocked, open=then.open, loop_exit=first.loop_exit or then.loop_exit,
        steps=first.steps + then.steps, via=then.via,
    )


def _jumps_out_of_loop(node: cst.CSTNode) -> bool:
    """A `break` or `continue` in `node` that leaves the loop around `node` (not one nested inside it)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Break, cst.Continue)):
            return True
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, _LOOPS):
            if current.orelse is not None:
                stack.append(current.orelse)  # a loop's `else` belongs to the loop around it
            continue
        stack.extend(current.children)
    return False


def _is_full_index(index: cst.BaseSlice) -> bool:
    if isinstance(index, cst.Slice):
        return index.lower is None and index.upper is None and index.step is None
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Ellipsis)


def _names(module: PythonModule, node: cst.CSTNode, name: str) -> Iterator[cst.Name]:
    """Name nodes that refer to the variable `name` (not attribute or keyword names), in source order."""
    if type(node) is cst.Name:
        if node.value == name:
            yield node
        return
    parent_of = module.parent
    for current in walk(node):
        if type(current) is cst.Name and current.value == name:
            parent = parent_of(current)
            kind = type(parent)
            if not ((kind is cst.Attribute and parent.attr is current) or (kind is cst.Arg and parent.keyword is current)):
                yield current
