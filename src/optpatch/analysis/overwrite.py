"""FullOverwriteProof: is every element of a fresh local tensor written before it is read?

This is the proof obligation of OPT101 (RULES.md). From the statement that
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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from optpatch.model import KeepCategory
from optpatch.python_frontend import PythonModule, walk
from optpatch.python_scope import full_name_of

_DECLARATIONS = frozenset({cst.Global, cst.Nonlocal})
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})

METADATA_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "layout", "is_cuda", "is_sparse", "is_quantized", "is_meta", "itemsize"}
)
METADATA_METHODS = frozenset(
    {"size", "dim", "numel", "nelement", "stride", "element_size", "is_contiguous", "get_device", "ndimension"}
)
# In-place methods that assign every element of their receiver.
FULL_WRITE_METHODS = frozenset(
    {"copy_", "fill_", "zero_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_",
     "geometric_", "log_normal_", "cauchy_"}
)
# Ops whose `out=` tensor is written in full (resized first if its shape differs).
FULL_OUT_OPS = frozenset(
    "torch." + name
    for name in (
        "add", "sub", "mul", "div", "matmul", "mm", "bmm", "addmm", "baddbmm", "cat", "concat", "stack",
        "exp", "log", "sqrt", "rsqrt", "abs", "neg", "sigmoid", "tanh", "clamp", "where", "index_select",
        "gather", "cumsum", "sum", "mean", "maximum", "minimum", "pow", "randn", "rand", "arange",
    )
)
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

    def reached(self, path: "Via | None") -> "Step":
        """This step, saying it is reached only along `path` (e.g. when a loop runs zero times).

        A use reached only that way is blocking because of the path (the
        loop that may not run), so the path's category replaces the use's.
        """
        if path is None or self.on_path:
            return self
        return Step(self.line, f"{self.text}, reached {path.text}", True, path.category)


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
        return "; ".join(f"L{s.line}: {s.text}" for s in writes) or "the value is never read"


class _Use:
    METADATA, WRITE, DEAD, BLOCK = "metadata", "write", "dead", "block"


_K = KeepCategory


def prove_full_overwrite(module: PythonModule, statement: cst.BaseSmallStatement, name: str) -> OverwriteProof:
    """Follow every path from `statement` (which binds `name`) to the first touch of `name`."""
    return _Prover(module, name).prove(statement)


class _Prover:
    def __init__(self, module: PythonModule, name: str):
        self.module = module
        self.name = name

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
        early = self._scope_blocker(scope)
        if early:
            return OverwriteProof(False, [], early)
        result = self._scan(self._items_after(statement))
        item = self._item_of(statement)
        while not result.blocked:
            owner, role = self._owner(item)
            if owner is scope:
                if result.open:
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
        """Straight-line code entered along `via` (the plain path when empty)."""
        result = PathResult(via=via)
        for item in items:
            step = self._scan_item(item)
            result.steps.extend(step.steps)
            result.loop_exit = result.loop_exit or step.loop_exit
            if step.blocked:
                result.blocked = step.blocked.reached(result.via)
                return result
            if not step.open:
                result.open = False
                return result
            result.via = result.via or step.via
        return result

    def _scan_item(self, item: cst.CSTNode) -> PathResult:
        if isinstance(item, cst.BaseSmallStatement):
            return self._scan_small(item)
        if not self._mentions(item):
            # Compound code that never names it leaves it untouched, but may still jump out of the loop.
            return PathResult(open=True, loop_exit=_jumps_out_of_loop(item))
        if isinstance(item, cst.If):
            return self._scan_if(item)
        if isinstance(item, _LOOPS):
            return self._scan_loop(item)
        if isinstance(item, cst.With):
            return self._scan_with(item)
        if isinstance(item, _TRIES):
            return self._scan_try(item)
        if isinstance(item, (cst.FunctionDef, cst.ClassDef)):
            return PathResult(blocked=Step(self._line(item), f"captured by the nested {self._kind(item)} here", category=_K.CAPTURED))
        return PathResult(blocked=Step(self._line(item), f"used in a `{type(item).__name__.lower()}` statement", category=_K.OTHER))

    def _scan_small(self, statement: cst.BaseSmallStatement) -> PathResult:
        line = self._line(statement)
        if not self._mentions(statement):
            if isinstance(statement, (cst.Return, cst.Raise)):
                return PathResult(open=False, steps=[Step(line, f"path ends ({self._code(statement)}) before any read")])
            if isinstance(statement, (cst.Break, cst.Continue)):
                return PathResult(open=False, loop_exit=True)
            return PathResult(open=True)
        kind, text, category = self._classify(statement)
        if kind == _Use.BLOCK:
            return PathResult(blocked=Step(line, text, category=category))
        if kind in (_Use.WRITE, _Use.DEAD):
            return PathResult(open=False, steps=[Step(line, text, writes=True)])
        steps = [Step(line, f"metadata only: {self._code(statement)}")]
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
        return PathResult(open=True, loop_exit=tail.loop_exit, steps=[note], via=via)

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

    def _classify(self, statement: cst.BaseSmallStatement) -> tuple[str, str, KeepCategory | None]:
        """The effect of one simple statement on the name: its first blocking use (and its kind), or its write."""
        uses = list(_names(self.module, statement, self.name))
        write: tuple[str, str, None] | None = None
        for use in uses:
            kind, text, category = self._classify_use(use, statement)
            if kind == _Use.BLOCK:
                return kind, text, category
            if kind in (_Use.WRITE, _Use.DEAD):
                write = (kind, text, None)
        return write or (_Use.METADATA, "", None)

    def _classify_use(self, use: cst.Name, statement: cst.BaseSmallStatement) -> tuple[str, str, KeepCategory | None]:
        if self._is_metadata_use(use):
            return _Use.METADATA, "", None
        module = self.module
        parent = module.parent(use)
        grand = module.parent(parent) if parent is not None else None
        code = self._code(statement)
        if isinstance(parent, cst.Attribute) and parent.value is use:
            attribute = parent.attr.value
            if isinstance(grand, cst.Call) and grand.func is parent:
                if attribute in FULL_WRITE_METHODS:
                    if not self._is_whole_statement(grand, statement):
                        return _Use.BLOCK, f"the result of `{self.name}.{attribute}(...)` is used, so it escapes: {code}", _K.STORED
                    if any(self._reads_name(arg.value) for arg in grand.args):
                        return _Use.BLOCK, f"reads `{self.name}` while writing it: {code}", _K.READ_BEFORE_WRITE
                    return _Use.WRITE, f"overwritten in full by {code}", None
                return (_Use.BLOCK, *self._method_blocker(attribute, code))
            return _Use.BLOCK, f"`{self.name}.{attribute}` reads or aliases it: {code}", _K.READ_BEFORE_WRITE
        if isinstance(parent, cst.Subscript) and parent.value is use:
            return self._classify_subscript(parent, statement, code)
        if isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, (cst.Tuple, cst.List, cst.Element)) and self._is_assign_target(parent)
        ):
            if self._reads_name(statement.value):
                return _Use.BLOCK, f"reads `{self.name}` to compute its new value: {code}", _K.READ_BEFORE_WRITE
            return _Use.DEAD, f"reassigned by {code}: the zeros were never read", None
        if isinstance(parent, cst.AnnAssign) and parent.target is use:
            if parent.value is None:
                return _Use.METADATA, "", None
            if self._reads_name(parent.value):
                return _Use.BLOCK, f"reads `{self.name}` to compute its new value: {code}", _K.READ_BEFORE_WRITE
            return _Use.DEAD, f"reassigned by {code}: the zeros were never read", None
        if isinstance(parent, cst.AugAssign) and parent.target is use:
            return _Use.BLOCK, f"read-modify-write: {code}", _K.READ_MODIFY_WRITE
        if isinstance(parent, cst.Del) or (isinstance(parent, cst.Element) and isinstance(statement, cst.Del)):
            return _Use.DEAD, f"deleted by {code}: the zeros were never read", None
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            return self._classify_argument(parent, grand, statement, code)
        if isinstance(parent, cst.Return):
            return _Use.BLOCK, f"returned to the caller, who may read it: {code}", _K.RETURNED
        if isinstance(parent, cst.Yield):
            return _Use.BLOCK, f"yielded to the caller, who may read it: {code}", _K.RETURNED
        return _Use.BLOCK, f"read or stored: {code}", _K.READ_BEFORE_WRITE

    def _classify_subscript(self, subscript: cst.Subscript, statement, code: str) -> tuple[str, str, KeepCategory | None]:
        parent = self.module.parent(subscript)
        full = all(_is_full_index(element.slice) for element in subscript.slice)
        if isinstance(parent, cst.AssignTarget) and isinstance(statement, cst.Assign):
            if len(statement.targets) != 1:
                return _Use.BLOCK, f"chained assignment: {code}", _K.OTHER
            if not full:
                return _Use.BLOCK, f"partial write (only the indexed elements): {code}", _K.PARTIAL_WRITE
            if self._reads_name(statement.value):
                return _Use.BLOCK, f"reads `{self.name}` while writing it: {code}", _K.READ_BEFORE_WRITE
            return _Use.WRITE, f"overwritten in full by {code}", None
        if isinstance(parent, cst.AugAssign) and parent.target is subscript:
            return _Use.BLOCK, f"read-modify-write: {code}", _K.READ_MODIFY_WRITE
        if isinstance(parent, cst.Attribute):
            return _Use.BLOCK, f"a slice or view of it is used (writes through a view are partial): {code}", _K.VIEW_TAKEN
        return _Use.BLOCK, f"reads its elements: {code}", _K.READ_BEFORE_WRITE

    def _classify_argument(self, arg: cst.Arg, call: cst.Call, statement, code: str) -> tuple[str, str, KeepCategory | None]:
        if arg.keyword is not None and arg.keyword.value == "out":
            op = self.module.refers_to(call.func, FULL_OUT_OPS)
            if op is None:
                return _Use.BLOCK, f"`out=` of a call not known to write its whole output: {code}", _K.OUT_TARGET
            if not self._is_whole_statement(call, statement):
                return _Use.BLOCK, f"the result of the `out=` call is used, so it escapes: {code}", _K.STORED
            if any(self._reads_name(other.value) for other in call.args if other is not arg):
                return _Use.BLOCK, f"`{self.name}` is both input and `out=`: {code}", _K.OUT_TARGET
            return _Use.WRITE, f"overwritten in full by {code} ({op} writes its whole `out=`)", None
        callee = self.module.text(call.func)
        return _Use.BLOCK, f"passed to `{callee}(...)`, which may read it: {code}", _K.PASSED

    def _method_blocker(self, attribute: str, code: str) -> tuple[str, KeepCategory]:
        if attribute.endswith("_") and not attribute.startswith("_"):
            return f"in-place `{attribute}` reads before it writes, or writes only part: {code}", _K.READ_MODIFY_WRITE
        if attribute in _VIEW_METHODS:
            return f"a view of it is taken (writes through a view are partial): {code}", _K.VIEW_TAKEN
        return f"`{self.name}.{attribute}(...)` reads it: {code}", _K.READ_BEFORE_WRITE

    def _is_metadata_use(self, use: cst.Name) -> bool:
        """`x.shape`, `x.size()`, `len(x)`, `x is None`: uses that never read an element."""
        module = self.module
        parent = module.parent(use)
        grand = module.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is use:
            if parent.attr.value in METADATA_ATTRIBUTES:
                return not isinstance(grand, (cst.AssignTarget, cst.AugAssign, cst.Del))
            return parent.attr.value in METADATA_METHODS and isinstance(grand, cst.Call) and grand.func is parent
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            return (
                parent.keyword is None and parent.star == "" and len(grand.args) == 1
                and module.qualified_names(grand.func) == {"builtins.len"}
            )
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
        for use in _names(self.module, node, self.name):
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
        return any(True for _ in _names(self.module, node, self.name))

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
