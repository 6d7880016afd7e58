"""FullOverwriteProof: is every element of a fresh local tensor written before it is read?

This is the proof obligation of OPT101 (RULES.md). From the statement that
binds the allocation, every control-flow path is followed to the first
statement that touches the name's values. The proof holds when that
statement overwrites all of them on every path (`copy_`, `fill_`, a full
slice assignment, `out=` of an op that writes its whole output, a plain
reassignment), with only metadata uses (`x.shape`, `x.size()`, `len(x)`, ...)
before it. Anything else is a blocking use, reported with its line, and the
site is kept. When in doubt the analysis keeps: a write inside a loop that
may run zero times, or in one branch only, proves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from optpatch.python_frontend import PythonModule, walk

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


@dataclass
class Step:
    line: int
    text: str


@dataclass
class PathResult:
    """What the paths through some code do with the name.

    `blocked`: a path reads or leaks it first. `open`: a path reaches the end
    untouched. `loop_exit`: a path leaves via break/continue untouched.
    """

    blocked: Step | None = None
    open: bool = True
    loop_exit: bool = False
    steps: list[Step] = field(default_factory=list)


@dataclass
class OverwriteProof:
    proven: bool
    steps: list[Step]
    blocker: Step | None = None

    def summary(self) -> str:
        if not self.proven:
            assert self.blocker
            return f"L{self.blocker.line}: {self.blocker.text}"
        writes = [s for s in self.steps if s.text.startswith(("overwritten", "reassigned", "dead"))]
        return "; ".join(f"L{s.line}: {s.text}" for s in writes) or "the value is never read"


class _Use:
    METADATA, WRITE, DEAD, BLOCK = "metadata", "write", "dead", "block"


def prove_full_overwrite(module: PythonModule, statement: cst.BaseSmallStatement, name: str) -> OverwriteProof:
    """Follow every path from `statement` (which binds `name`) to the first touch of `name`."""
    return _Prover(module, name).prove(statement)


class _Prover:
    def __init__(self, module: PythonModule, name: str):
        self.module = module
        self.name = name

    # -- the walk upwards from the allocation ----------------------------------

    def prove(self, statement: cst.BaseSmallStatement) -> OverwriteProof:
        function = self.module.enclosing_function(statement)
        if function is not None:
            early = self._scope_blocker(function)
            if early:
                return OverwriteProof(False, [], early)
        result = self._scan(self._items_after(statement))
        item = self._item_of(statement)
        while not result.blocked and (result.open or result.loop_exit):
            owner, block_field = self._owner(item)
            if isinstance(owner, cst.FunctionDef):
                result.steps.append(Step(self._line(owner), f"`{self.name}` dies at the end of {owner.name.value}()"))
                result.open = result.loop_exit = False
                break
            if isinstance(owner, cst.Module):
                result.blocked = Step(self._line(statement), "module-level name: other modules may read it")
                break
            if isinstance(owner, cst.ClassDef):
                result.blocked = Step(self._line(statement), "class attribute: read wherever the class is used")
                break
            result = self._continue_after(owner, block_field, item, result)
            item = self._item_of(owner)
        if result.blocked:
            return OverwriteProof(False, result.steps, result.blocked)
        return OverwriteProof(True, result.steps)

    def _continue_after(self, owner: cst.CSTNode, block_field: str, item: cst.CSTNode, result: PathResult) -> PathResult:
        """The paths leaving a block of `owner` with the name untouched, followed onwards."""
        loop_exit = result.loop_exit
        open_ = result.open
        if isinstance(owner, (cst.For, cst.While)) and block_field == "body":
            back = self._loop_back(owner, item)
            if back:
                result.blocked = back
                return result
            open_, loop_exit = True, False  # the last iteration's value leaves the loop
            tail = self._items_of_block(owner.orelse.body) if owner.orelse else []
            after = self._scan(tail + self._items_after(owner))
        elif isinstance(owner, cst.Try) and block_field == "body":
            blocker = self._exception_path_blocker(owner)
            if blocker:
                result.blocked = blocker
                return result
            open_ = True  # an exception before the write reaches the code after the try
            tail = self._items_of_block(owner.orelse.body) if owner.orelse else []
            after = self._scan(tail + self._items_after(owner))
        else:
            after = self._scan(self._items_after(owner)) if open_ else PathResult(open=False)
        after.steps = result.steps + after.steps
        after.loop_exit = after.loop_exit or loop_exit
        return after

    def _loop_back(self, loop: cst.For | cst.While, item: cst.CSTNode) -> Step | None:
        """Next iteration: only safe if the allocation is re-run before any use of the name."""
        body = self._items_of_block(loop.body)
        if item not in body:
            return Step(self._line(loop), "the value may reach the next iteration of the loop")
        if not isinstance(item, cst.BaseSmallStatement):
            return Step(self._line(item), "allocated conditionally inside a loop: the next iteration may use the old value")
        for earlier in body[: body.index(item)]:
            if self._mentions(earlier):
                return Step(self._line(earlier), f"the next loop iteration uses `{self.name}` before re-allocating it")
        return None

    # -- scanning statements forward -------------------------------------------

    def _scan(self, items: list[cst.CSTNode]) -> PathResult:
        result = PathResult()
        for item in items:
            step = self._scan_item(item)
            result.steps.extend(step.steps)
            result.loop_exit = result.loop_exit or step.loop_exit
            if step.blocked:
                result.blocked = step.blocked
                return result
            if not step.open:
                result.open = False
                return result
        return result

    def _scan_item(self, item: cst.CSTNode) -> PathResult:
        if isinstance(item, cst.BaseSmallStatement):
            return self._scan_small(item)
        if not self._mentions(item):
            return PathResult(open=True)  # compound code that never names it: transparent
        if isinstance(item, cst.If):
            return self._scan_if(item)
        if isinstance(item, (cst.For, cst.While)):
            return self._scan_loop(item)
        if isinstance(item, cst.With):
            for with_item in item.items:
                blocker = self._expression_blocker(with_item)
                if blocker:
                    return PathResult(blocked=blocker)
            return self._scan(self._items_of_block(item.body))
        if isinstance(item, cst.Try):
            return self._scan_try(item)
        if isinstance(item, (cst.FunctionDef, cst.ClassDef)):
            return PathResult(blocked=Step(self._line(item), f"captured by the nested {self._kind(item)} here"))
        return PathResult(blocked=Step(self._line(item), f"used in a `{type(item).__name__.lower()}` statement"))

    def _scan_small(self, statement: cst.BaseSmallStatement) -> PathResult:
        line = self._line(statement)
        if not self._mentions(statement):
            if isinstance(statement, (cst.Return, cst.Raise)):
                return PathResult(open=False, steps=[Step(line, f"path ends ({self._code(statement)}) before any read")])
            if isinstance(statement, (cst.Break, cst.Continue)):
                return PathResult(open=False, loop_exit=True)
            return PathResult(open=True)
        kind, text = self._classify(statement)
        if kind == _Use.BLOCK:
            return PathResult(blocked=Step(line, text))
        if kind in (_Use.WRITE, _Use.DEAD):
            return PathResult(open=False, steps=[Step(line, text)])
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
        else:
            branches.append(PathResult(open=True))  # no else: the test may be false
        return _join(branches)

    def _scan_loop(self, node: cst.For | cst.While) -> PathResult:
        header = [node.iter, node.target] if isinstance(node, cst.For) else [node.test]
        for part in header:
            blocker = self._expression_blocker(part)
            if blocker:
                return PathResult(blocked=blocker)
        body = self._scan(self._items_of_block(node.body))
        if body.blocked:
            return body
        if node.orelse:
            tail = self._scan(self._items_of_block(node.orelse.body))
            if tail.blocked:
                return tail
        # Whatever the body writes, the loop may run zero times: the name is still untouched.
        return PathResult(open=True, steps=[Step(self._line(node), "note: a write inside this loop proves nothing (it may run zero times)")])

    def _scan_try(self, node: cst.Try) -> PathResult:
        blocker = self._exception_path_blocker(node)
        if blocker:
            return PathResult(blocked=blocker)
        body = self._scan(self._items_of_block(node.body))
        if body.blocked:
            return body
        # An exception before the write may land in a handler that falls through.
        handlers_fall_through = any(self._scan(self._items_of_block(h.body)).open for h in node.handlers)
        body.open = body.open or handlers_fall_through
        return body

    def _exception_path_blocker(self, node: cst.Try) -> Step | None:
        for part in [*node.handlers, node.orelse, node.finalbody]:
            if part is not None and self._mentions(part):
                return Step(self._line(part), f"`{self.name}` is used on an exception path of this try")
        return None

    # -- one statement ------------------------------------------------------------

    def _classify(self, statement: cst.BaseSmallStatement) -> tuple[str, str]:
        """The effect of one simple statement on the name: its first blocking use, or its write."""
        uses = list(_names(statement, self.name))
        write: tuple[str, str] | None = None
        for use in uses:
            kind, text = self._classify_use(use, statement)
            if kind == _Use.BLOCK:
                return kind, text
            if kind in (_Use.WRITE, _Use.DEAD):
                write = (kind, text)
        return write or (_Use.METADATA, "")

    def _classify_use(self, use: cst.Name, statement: cst.BaseSmallStatement) -> tuple[str, str]:
        module = self.module
        parent = module.parent(use)
        grand = module.parent(parent) if parent is not None else None
        code = self._code(statement)
        if isinstance(parent, cst.Attribute) and parent.value is use:
            attribute = parent.attr.value
            if attribute in METADATA_ATTRIBUTES:
                return _Use.METADATA, ""
            if isinstance(grand, cst.Call) and grand.func is parent:
                if attribute in METADATA_METHODS:
                    return _Use.METADATA, ""
                if attribute in FULL_WRITE_METHODS:
                    if not self._is_whole_statement(grand, statement):
                        return _Use.BLOCK, f"the result of `{self.name}.{attribute}(...)` is used, so it escapes: {code}"
                    if any(self._reads_name(arg.value) for arg in grand.args):
                        return _Use.BLOCK, f"reads `{self.name}` while writing it: {code}"
                    return _Use.WRITE, f"overwritten in full by {code}"
                return _Use.BLOCK, self._method_blocker(attribute, code)
            return _Use.BLOCK, f"`{self.name}.{attribute}` reads or aliases it: {code}"
        if isinstance(parent, cst.Subscript) and parent.value is use:
            return self._classify_subscript(parent, statement, code)
        if isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, (cst.Tuple, cst.List, cst.Element)) and self._is_assign_target(parent)
        ):
            if self._reads_name(statement.value):
                return _Use.BLOCK, f"reads `{self.name}` to compute its new value: {code}"
            return _Use.DEAD, f"reassigned by {code}: the zeros were never read"
        if isinstance(parent, cst.AnnAssign) and parent.target is use:
            if parent.value is None:
                return _Use.METADATA, ""
            if self._reads_name(parent.value):
                return _Use.BLOCK, f"reads `{self.name}` to compute its new value: {code}"
            return _Use.DEAD, f"reassigned by {code}: the zeros were never read"
        if isinstance(parent, cst.AugAssign) and parent.target is use:
            return _Use.BLOCK, f"read-modify-write: {code}"
        if isinstance(parent, cst.Del) or (isinstance(parent, cst.Element) and isinstance(statement, cst.Del)):
            return _Use.DEAD, f"deleted by {code}: the zeros were never read"
        if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.Is, cst.IsNot)):
            return _Use.METADATA, ""
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            return self._classify_argument(parent, grand, statement, code)
        if isinstance(parent, cst.Return):
            return _Use.BLOCK, f"returned to the caller, who may read it: {code}"
        if isinstance(parent, (cst.Yield,)):
            return _Use.BLOCK, f"yielded to the caller, who may read it: {code}"
        return _Use.BLOCK, f"read or stored: {code}"

    def _classify_subscript(self, subscript: cst.Subscript, statement, code: str) -> tuple[str, str]:
        parent = self.module.parent(subscript)
        full = all(_is_full_index(element.slice) for element in subscript.slice)
        if isinstance(parent, cst.AssignTarget) and isinstance(statement, cst.Assign):
            if len(statement.targets) != 1:
                return _Use.BLOCK, f"chained assignment: {code}"
            if not full:
                return _Use.BLOCK, f"partial write (only the indexed elements): {code}"
            if self._reads_name(statement.value):
                return _Use.BLOCK, f"reads `{self.name}` while writing it: {code}"
            return _Use.WRITE, f"overwritten in full by {code}"
        if isinstance(parent, cst.AugAssign) and parent.target is subscript:
            return _Use.BLOCK, f"read-modify-write: {code}"
        if isinstance(parent, cst.Attribute):
            return _Use.BLOCK, f"a slice or view of it is used (writes through a view are partial): {code}"
        return _Use.BLOCK, f"reads its elements: {code}"

    def _classify_argument(self, arg: cst.Arg, call: cst.Call, statement, code: str) -> tuple[str, str]:
        if isinstance(call.func, cst.Name) and call.func.value == "len" and not self.module.qualified_names(call.func) - {"builtins.len", "len"}:
            return _Use.METADATA, ""
        if arg.keyword is not None and arg.keyword.value == "out":
            op = self.module.refers_to(call.func, FULL_OUT_OPS)
            if op is None:
                return _Use.BLOCK, f"`out=` of a call not known to write its whole output: {code}"
            if not self._is_whole_statement(call, statement):
                return _Use.BLOCK, f"the result of the `out=` call is used, so it escapes: {code}"
            if any(self._reads_name(other.value) for other in call.args if other is not arg):
                return _Use.BLOCK, f"`{self.name}` is both input and `out=`: {code}"
            return _Use.WRITE, f"overwritten in full by {code} ({op} writes its whole `out=`)"
        callee = self.module.text(call.func)
        return _Use.BLOCK, f"passed to `{callee}(...)`, which may read it: {code}"

    def _method_blocker(self, attribute: str, code: str) -> str:
        if attribute.endswith("_") and not attribute.startswith("_"):
            return f"in-place `{attribute}` reads before it writes, or writes only part: {code}"
        if attribute in ("view", "narrow", "reshape", "view_as", "as_strided", "select", "unsqueeze", "transpose", "t", "permute", "flatten", "expand", "chunk", "split", "unbind"):
            return f"a view of it is taken (writes through a view are partial): {code}"
        return f"`{self.name}.{attribute}(...)` reads it: {code}"

    def _expression_blocker(self, node: cst.CSTNode) -> Step | None:
        """Compound-statement headers may only use metadata."""
        for use in _names(node, self.name):
            parent = self.module.parent(use)
            grand = self.module.parent(parent) if parent is not None else None
            if isinstance(parent, cst.Attribute) and parent.value is use:
                if parent.attr.value in METADATA_ATTRIBUTES:
                    continue
                if parent.attr.value in METADATA_METHODS and isinstance(grand, cst.Call) and grand.func is parent:
                    continue
            if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.Is, cst.IsNot)):
                continue
            if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and self.module.text(grand.func) == "len":
                continue
            return Step(self._line(use), f"read in a condition or header: {self.module.text(node)[:80]}")
        return None

    # -- helpers ----------------------------------------------------------------------

    def _scope_blocker(self, function: cst.FunctionDef) -> Step | None:
        for node in walk(function.body):
            if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == self.name for n in node.names):
                return Step(self._line(node), f"`{self.name}` is declared {type(node).__name__.lower()}: other code may read it")
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and any(True for _ in _names(node, self.name)):
                return Step(self._line(node), f"`{self.name}` is captured by a nested {self._kind(node)}, which may read it at any time")
        return None

    def _reads_name(self, node: cst.CSTNode | None) -> bool:
        """True when `node` uses the name's values (metadata uses do not count)."""
        if node is None:
            return False
        return self._expression_blocker(node) is not None

    def _mentions(self, node: cst.CSTNode) -> bool:
        return any(True for _ in _names(node, self.name))

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
        """The statement (or module) whose block holds `item`, and which of its blocks."""
        node = item
        parent = self.module.parent(node)
        while parent is not None:
            if isinstance(parent, (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.FunctionDef, cst.ClassDef, cst.Module, cst.Match)):
                if isinstance(parent, cst.If) and parent.orelse is node:
                    return self._top_if(parent), "orelse"
                field_name = "body" if getattr(parent, "body", None) is node or isinstance(parent, cst.Module) else "other"
                if isinstance(parent, cst.If):
                    return self._top_if(parent), field_name
                return parent, field_name
            if isinstance(parent, (cst.Else, cst.ExceptHandler, cst.Finally, cst.MatchCase)):
                owner = self.module.parent(parent)
                if isinstance(owner, cst.If):
                    return self._top_if(owner), "orelse"
                return owner, "other"
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
    joined = PathResult(open=False)
    for branch in branches:
        joined.steps.extend(branch.steps)
        if branch.blocked and not joined.blocked:
            joined.blocked = branch.blocked
        joined.open = joined.open or branch.open
        joined.loop_exit = joined.loop_exit or branch.loop_exit
    return joined


def _is_full_index(index: cst.BaseSlice) -> bool:
    if isinstance(index, cst.Slice):
        return index.lower is None and index.upper is None and index.step is None
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Ellipsis)


def _names(node: cst.CSTNode, name: str):
    """Name nodes that refer to the variable `name` (not attribute or keyword names)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            if current.value == name:
                yield current
            continue
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
            continue
        if isinstance(current, cst.Arg):
            stack.append(current.value)
            continue
        stack.extend(reversed(current.children))
