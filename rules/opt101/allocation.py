"""Which calls are allocations of OPT101, and of which kind: in the screen's `ast` and in libcst's tree.

An allocation is `torch.zeros`, `torch.zeros_like`, `t.new_zeros`, or the
`full` forms with a zero fill, reached through any import of torch (`from
torch import zeros as z` included). Its kind (`zeros`, `new_full`, ...)
says what it becomes (`REPLACEMENT`) and how its sizes are spelled.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from optpatch.analysis.torch_api import keyword_arg
from optpatch.rule.python import CallIndex, PythonModule, ast_dotted_name, callee_name, walk

REPLACEMENT = {
    "zeros": "empty", "zeros_like": "empty_like", "new_zeros": "new_empty",
    "full": "empty", "full_like": "empty_like", "new_full": "new_empty",  # with a zero fill
}
TORCH_ALLOCATIONS = frozenset({"torch.zeros", "torch.zeros_like", "torch.full", "torch.full_like"})
METHODS = ("new_zeros", "new_full")  # tensor methods: the receiver is not resolved, only checked not to be a module
FILLED = frozenset({"full", "full_like", "new_full"})  # allocations only when their fill value is zero
ON_A_RECEIVER = frozenset({"zeros_like", "full_like", "new_zeros", "new_full"})  # a tensor subclass may intercept these


@dataclass
class ModuleFacts:
    """What the rule needs from the whole module, gathered in one walk (libcst walks are not cheap)."""

    calls: list[cst.Call] = field(default_factory=list)
    function_names: set[str] = field(default_factory=set)
    torch_imports: list[cst.ImportFrom] = field(default_factory=list)  # `from torch import a, b as c`
    star_import: str | None = None  # the first `from ... import *`: any bare name may come from it

    @classmethod
    def gather(cls, module: PythonModule) -> "ModuleFacts":
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


# -- in libcst's tree --------------------------------------------------------------------------


def allocation_kind(module: PythonModule, facts: ModuleFacts, call: cst.Call) -> str | None:
    """The kind of allocation CALL is (`zeros`, `new_full`, ...), or None when it is none of this rule's."""
    kind = _allocating_call(module, facts, call)
    if kind in FILLED and not _zero_fill(fill_argument(call, kind)):
        return None  # `torch.full(n, 7)`: not zeros
    return kind


def _allocating_call(module: PythonModule, facts: ModuleFacts, call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in METHODS:
        receiver_names = module.qualified_names(func.value)
        if any(not name.startswith("torch") and module.is_import(func.value) for name in receiver_names):
            return None  # np.new_zeros and friends: not a tensor method
        if func.attr.value in facts.function_names:
            return None  # the project's own `new_zeros`: the receiver may not be a tensor
        return func.attr.value
    if isinstance(func, (cst.Attribute, cst.Name)):
        name = module.refers_to(func, TORCH_ALLOCATIONS)
        if name:
            return name.rsplit(".", 1)[1]
    return None


def fill_argument(call: cst.Call, kind: str) -> cst.Arg | None:
    """The fill value of `full(size, v)`, `full_like(x, v)`, `t.new_full(size, v)`: second positional, or `fill_value=`."""
    keyword = keyword_arg(call, "fill_value")
    if keyword is not None:
        return keyword
    positional = [arg for arg in call.args if arg.keyword is None]
    return positional[1] if len(positional) > 1 and not any(arg.star for arg in positional[:2]) else None


def _zero_fill(arg: cst.Arg | None) -> bool:
    if arg is None:
        return False
    value = arg.value
    if isinstance(value, (cst.Integer, cst.Float)):
        return value.evaluated_value == 0
    return isinstance(value, cst.Name) and value.value == "False"


# -- in the screen's `ast` -----------------------------------------------------------------------


def allocations(calls: CallIndex) -> list[ast.Call]:
    """The calls `allocation_kind` may accept: by their last name, or a name `from torch import zeros as z` binds;
    `full`, `full_like` and `new_full` only with a zero fill; a function (not the `new_*` methods) only through a
    name that may be torch's (`calls_torch`).

    `allocation_kind` resolves a function through the module's imports of
    torch, or a name assigned and spelled `torch`: `tl.zeros` after `import
    triton.language as tl`, `np.zeros`, a parameter's `xp.zeros` are none of
    its allocations, and a file whose only `zeros` are those (a Triton
    kernel, a test's NumPy set-up) is not parsed with libcst for OPT101
    (flash-attention: 0.1 s of a cold scan's CPU; docs/benchmarks.md).
    """
    aliases = {
        alias.asname: alias.name for statement in calls.torch_imports for alias in statement.names
        if alias.asname and alias.name in REPLACEMENT
    }
    return [
        call for call in calls.named(*spellings(aliases))
        if (_on_a_receiver(call) or calls.calls_torch(call))
        and (not (callee_name(call) in FILLED or aliases.get(callee_name(call)) in FILLED) or _ast_zero_fill(call))
    ]


def _on_a_receiver(call: ast.Call) -> bool:
    """`t.new_zeros(...)`, `t.new_full(...)`: a tensor's method, whose receiver no import names."""
    return type(call.func) is ast.Attribute and call.func.attr in METHODS


def spellings(aliases) -> set[str]:
    """The last names an allocation's callee may have: `zeros`, `zeros_like`, `new_zeros`, the `full` forms, and their
    import aliases."""
    return set(REPLACEMENT).union(aliases)


def _ast_zero_fill(call: ast.Call) -> bool:
    """`_zero_fill(fill_argument(...))` for the screen's `ast`."""
    value = next((keyword.value for keyword in call.keywords if keyword.arg == "fill_value"), None)
    if value is None:
        if len(call.args) < 2 or any(type(arg) is ast.Starred for arg in call.args[:2]):
            return False
        value = call.args[1]
    return type(value) is ast.Constant and type(value.value) in (int, float, bool) and value.value == 0


def allocation_kind_alone(module: PythonModule, calls: CallIndex, call: ast.Call) -> bool:
    """`allocation_kind` for a call `settling_use` accepted (alone.py): no name of its callee is bound in its
    function."""
    func = call.func
    if type(func) is ast.Attribute and func.attr in METHODS:
        return func.attr not in calls.functions  # the receiver names no import (`settling_use`)
    return module.callee_in_a_function_refers_to(ast_dotted_name(func), TORCH_ALLOCATIONS) is not None
