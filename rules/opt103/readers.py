"""Where the copy's result is read, and whether every read is on the stream that was current at the copy.

The result is followed in its function through views (`.view(...)`, `[i]`,
`.T`), the local names it is bound to and calls that may return it, to its
reads and to where it escapes (returned, yielded, stored, put in a
container, captured): an escaped result's readers' streams are unknown, so
the fix needs `validate`. A read inside another stream's `with` block
keeps the site unless a wait between the streams lies in between.
"""

from __future__ import annotations

import re

import libcst as cst

from optpatch.analysis.torch_values import root_name, torch_callee
from optpatch.rule import KeepCategory, Kept, Tier
from optpatch.rule.python import SCOPE_NODES, PythonModule

from .function import Function
from .names import last_name
from .proof import Step
from .quoting import shorten, statement_text
from .site import Site
from .streams import stream_block, stream_switch, synchronisation_between, with_items

# Steps followed from the copy's result (views, names it is bound to) before its uses count as unknown.
MAX_FLOW_STEPS = 8
# Methods and attributes whose result may share the copy's memory: its readers are the copy's readers.
_ALIASING_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze", "expand", "expand_as",
    "permute", "transpose", "t", "contiguous", "narrow", "select", "unbind", "split", "chunk", "detach",
    "requires_grad_", "as_strided", "to", "cuda", "type", "long", "int", "float", "half", "bfloat16", "double",
    "bool", "short", "byte", "char", "movedim", "swapaxes", "swapdims", "diagonal", "unfold", "real", "imag",
    "__getitem__",
})
_ALIASING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data"})
_ALIASING_TORCH_FUNCTIONS = frozenset(f"torch.{name}" for name in _ALIASING_METHODS | {"atleast_1d", "atleast_2d", "broadcast_to"})
# How compiled extensions' modules are usually named (`amp_C`, `fused_layer_norm_cuda`, `deform_conv_ext`).
_EXTENSION_MODULE = re.compile(r"(?:^|_)(?:C|cuda|cpp|ext)$")
# Calls that keep their argument: a container's methods, and classes (a dataclass of inputs, a namedtuple).
_STORING_METHODS = frozenset({"append", "extend", "insert", "add", "put", "put_nowait", "setdefault", "update", "appendleft"})


def read_on_the_copy_stream(module: PythonModule, site: Site, readers: Readers | None) -> Step | Kept:
    """Is the result read only in this function, on the stream that was current at the copy?"""
    function = site.function
    if function is None or readers is None:
        return Step(Tier.VALIDATE,
                    "at module or class level: the result is an attribute that any code may read on any stream")
    copy_stream = stream_block(module, site.copy, function.node)
    if readers.discarded:
        return Kept("the result is never read: the blocking copy may be the point (a probe that waits for the GPU)",
                    KeepCategory.DISCARDED)
    copy_end = module.span(site.copy)[1]
    synchronised = []
    for use in readers.reads:
        block = stream_block(module, use, function.node)
        if block is copy_stream:
            continue
        line = module.start(use)[0]
        where = f"inside `with {with_items(module, block)}`" if block is not None else "outside the copy's stream block"
        sync = synchronisation_between(module, function, copy_end, module.span(use)[0])
        if sync is None:
            return Kept(f"L{line}: `{statement_text(module, use)}` reads the result {where}, another stream, with no "
                        "wait for the copy's stream in between: it could read before the copy lands",
                        KeepCategory.OTHER_STREAM)
        synchronised.append(f"L{line} reads it on another stream after `{sync}`")
    if synchronised:
        return Step(Tier.VALIDATE, "; ".join(synchronised))
    switch = stream_switch(function)
    if switch is not None:
        return Step(Tier.VALIDATE,
                    f"L{module.start(switch)[0]}: the function switches streams with `{module.text(switch.func)}`")
    if readers.escapes:
        return Step(Tier.VALIDATE, readers.escapes[0] + ": its readers' streams are unknown")
    return Step(Tier.SAFE, "the result is read only in this function, on the stream current at the copy")


class Readers:
    """Where the copy's result flows in one function: through views and local names, to reads and escapes."""

    def __init__(self, module: PythonModule, function: Function):
        self.module = module
        self.function = function
        self.reads: list[cst.CSTNode] = []  # the places the result (or a view, or a name bound to it) is used
        self.escapes: list[str] = []  # why the result may be read outside this function
        self.discarded = False
        self.names: set[str] = set()  # the local names the result (or a view of it) is bound to
        self._steps = 0

    def follow(self, value: cst.BaseExpression, first: bool = True) -> None:
        self._steps += 1
        if self._steps > MAX_FLOW_STEPS:
            self.escapes.append(f"`{self.module.text(value)}`: followed too far")
            return
        top = self._outermost_alias(value)
        parent = self.module.parent(top)
        if isinstance(parent, cst.Expr):
            if first and top is value:
                self.discarded = True
            return
        target = self._bound_name(top, parent)
        if target is not None:
            self._follow_name(target)
            return
        escape = self._escape(top, parent)
        if escape is not None:
            self.escapes.append(f"L{self.module.start(top)[0]}: {escape}")
        elif isinstance(parent, cst.Arg) and self._kept_by_call(parent):
            self.follow(self.module.parent(parent), first=False)

    def _outermost_alias(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """Climb views of `node` (`.view(...)`, `[i]`, `.T`, `x if c else y`): whatever shares its memory."""
        module = self.module
        while True:
            parent = module.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node:
                grand = module.parent(parent)
                if isinstance(grand, cst.Call) and grand.func is parent and parent.attr.value in _ALIASING_METHODS:
                    node = grand
                elif not isinstance(grand, cst.Call) and parent.attr.value in _ALIASING_ATTRIBUTES:
                    node = parent
                else:
                    return node
            elif isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent
            elif isinstance(parent, cst.IfExp) and node is not parent.test:
                node = parent
            elif isinstance(parent, cst.BooleanOperation):
                node = parent
            elif isinstance(parent, cst.Arg) and self._aliasing_call(parent):
                node = module.parent(parent)
            else:
                return node

    def _aliasing_call(self, arg: cst.Arg) -> bool:
        call = self.module.parent(arg)
        return isinstance(call, cst.Call) and self.module.refers_to(call.func, _ALIASING_TORCH_FUNCTIONS) is not None

    def _bound_name(self, top: cst.BaseExpression, parent: cst.CSTNode | None) -> cst.Name | None:
        """The local name in `name = top`, `name: T = top`, `(name := top)` or `a, name = x, top`."""
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is top:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return targets[0] if len(targets) == 1 and isinstance(targets[0], cst.Name) else None
        if isinstance(parent, cst.NamedExpr) and parent.value is top:
            return parent.target if isinstance(parent.target, cst.Name) else None
        if isinstance(parent, cst.Element):
            display = self.module.parent(parent)
            assign = self.module.parent(display)
            if (isinstance(display, (cst.Tuple, cst.List)) and isinstance(assign, cst.Assign) and assign.value is display
                    and len(assign.targets) == 1 and isinstance(assign.targets[0].target, (cst.Tuple, cst.List))):
                targets = assign.targets[0].target.elements
                index = next(i for i, element in enumerate(display.elements) if element is parent)
                if len(targets) == len(display.elements) and not any(
                        isinstance(e, cst.StarredElement) for e in (*targets, *display.elements)):
                    target = targets[index].value
                    return target if isinstance(target, cst.Name) else None
        return None

    def _follow_name(self, target: cst.Name) -> None:
        name = target.value
        if name in self.names:
            return
        self.names.add(name)
        for use in self.function.uses(name):
            if self.module.enclosing(use, SCOPE_NODES) is not self.function.node:
                self.escapes.append(f"L{self.module.start(use)[0]}: `{name}` is captured by a nested function")
                continue
            self.reads.append(use)
            self.follow(use, first=False)

    def _escape(self, top: cst.BaseExpression, parent: cst.CSTNode | None) -> str | None:
        """Why the value at `top` leaves the function, or None when it is read here."""
        module = self.module
        if isinstance(parent, cst.Return):
            return "the result is returned"
        if isinstance(parent, (cst.Yield, cst.Lambda)):
            return "the result is yielded" if isinstance(parent, cst.Yield) else "the result is a lambda's value"
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is top:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return f"the result is stored in `{module.text(targets[0])}`"
        if isinstance(parent, (cst.Element, cst.DictElement, cst.StarredElement)):
            display = module.parent(parent)
            holder = module.parent(display)
            if isinstance(holder, cst.Arg) and self._torch_call(module.parent(holder)):
                return None  # `torch.cat([a, b])`: read at once
            return f"the result is put in `{shorten(module.text(display))}`"
        if isinstance(parent, cst.Arg):
            call = module.parent(parent)
            method = last_name(call.func) if isinstance(call, cst.Call) else ""
            if method in _STORING_METHODS:
                return f"the result is stored by `.{method}()`"
            if method[:1].isupper():
                return f"the result is passed to `{method}(...)`, which may keep it"
            extension = self._compiled_extension(call) if isinstance(call, cst.Call) else None
            if extension is not None:
                return (f"the result goes to `{module.text(call.func)}(...)` of `{extension}`, named as compiled "
                        "extensions are: its kernels may run on the legacy default stream, not the current one")
        return None

    def _compiled_extension(self, call: cst.Call) -> str | None:
        """The module of an imported callee named as `torch.utils.cpp_extension` builds usually are (`amp_C`,
        `fused_layer_norm_cuda`, `ngram_repeat_block_cuda`): a launch there may ignore the current stream
        (fairseq's `ngram_repeat_block_cuda` launches on the legacy default stream), so a read there is not
        proven to wait for the copy."""
        if self._torch_call(call) or not self.module.is_import(root_name(call.func)):
            return None
        for name in self.module.qualified_names(call.func):
            parts = name.split(".")[:-1]
            extension = next((part for part in parts if _EXTENSION_MODULE.search(part)), None)
            if extension is not None:
                return extension
        return None

    def _kept_by_call(self, arg: cst.Arg) -> bool:
        """A call that is not torch's may return its argument: follow the call's result too."""
        call = self.module.parent(arg)
        return isinstance(call, cst.Call) and not self._torch_call(call)

    def _torch_call(self, call) -> bool:
        return isinstance(call, cst.Call) and torch_callee(self.module, call) is not None
