"""What is copied: the host tensor this rule pins, by its constructor, and the local name it is bound to.

The sources are `torch.tensor(data)` (a copy of host values), the
constructors that share their data's memory (`torch.from_numpy`,
`torch.as_tensor`: pinned by a copy at the move), the legacy constructors
of a list (`torch.LongTensor(ids)`: no `pin_memory=` keyword either),
`x.pin_memory()`, and, bound to a name, a CPU factory the function fills on
the host (`t = torch.zeros(n)`, `t[i] = v`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment

from optpatch.analysis.torch_api import CONSTANT_FACTORIES, LEGACY_TENSOR_TYPES, is_true, keyword_arg
from optpatch.analysis.torch_values import factory_name, torch_callee
from optpatch.rule.python import PythonModule

from .host_data import takes_pin_keyword
from .names import is_augmented, last_name, single_assignment

DATA = frozenset({"torch.tensor"})  # copies host values
SHARING = frozenset({"torch.as_tensor", "torch.from_numpy"})  # share their data's memory: pinned by a copy at the move
FILLED_FACTORIES = CONSTANT_FACTORIES | {"torch.arange"}  # a source only where the function fills them on the host
# The last names of the constructors `constructor` accepts, for the `ast` screen.
LEGACY_NAMES = frozenset(name.rsplit(".", 1)[1] for name in LEGACY_TENSOR_TYPES)
CHAINED_CONSTRUCTORS = frozenset({"tensor", "as_tensor", "from_numpy", *LEGACY_NAMES})
NAMED_CONSTRUCTORS = CHAINED_CONSTRUCTORS | {name.rsplit(".", 1)[1] for name in FILLED_FACTORIES}


@dataclass(frozen=True)
class Source:
    """The host tensor that is copied: its constructor, and the local name it is bound to, if any."""

    call: cst.Call  # torch.tensor(...), torch.from_numpy(...), x.pin_memory(), torch.zeros(...)
    callee: str  # "torch.tensor", "torch.from_numpy", "pin_memory", "torch.zeros", ...
    name: cst.Name | None = None  # the move's receiver, when the source is `t = constructor` in this function
    statement: cst.SimpleStatementLine | None = None  # that assignment
    # `torch.tensor(data, pin_memory=True)` raises for a NumPy array ("Can't pin tensor constructed from numpy")
    # and for a tensor ("... from a variable"): the keyword goes in only where the data is provably Python data.
    keyword_pins: bool = True

    @property
    def pinned(self) -> bool:
        pinned = keyword_arg(self.call, "pin_memory")
        return self.callee == "pin_memory" or (pinned is not None and is_true(pinned.value))

    @property
    def pinned_at_the_move(self) -> bool:
        """`.pin_memory()` is inserted at the move, copying the data into a fresh buffer (sharing constructors, and
        `torch.tensor` over data that may be an array or a tensor)."""
        return not self.pinned and (self.callee in SHARING or not self.keyword_pins)

    @property
    def named_buffer_is_pinned(self) -> bool:
        """The bound tensor itself is (or becomes) the pinned source of the copy: nothing may write it after."""
        return self.name is not None and not self.pinned_at_the_move


def constructor(module: PythonModule, call: cst.Call, named: bool) -> Source | None:
    """The call as a host source this rule pins, else None. A bare CPU factory counts only when bound to a name."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "pin_memory" and not call.args:
        return Source(call, "pin_memory")
    if last_name(call.func) not in (NAMED_CONSTRUCTORS if named else CHAINED_CONSTRUCTORS):
        return None  # the names are resolved only for a callee that may be one
    callee = factory_name(module, call) or torch_callee(module, call)
    if callee in DATA:
        return Source(call, callee, keyword_pins=takes_pin_keyword(module, call))
    if callee in LEGACY_TENSOR_TYPES:
        return Source(call, callee, keyword_pins=False)  # no `pin_memory=` keyword: pinned by a copy at the move
    if callee in SHARING or (named and callee in FILLED_FACTORIES):
        return Source(call, callee)
    return None


def named_source(module: PythonModule, receiver: cst.Name, move_call: cst.Call) -> Source | None:
    """`t = constructor` bound once, in the function that copies `t`, before the copy."""
    function = module.enclosing_function(move_call)
    bindings = [b for b in module.bindings(receiver) or () if not is_augmented(module, b)]
    if function is None or len(bindings) != 1:
        return None
    (binding,) = bindings
    if not (isinstance(binding, Assignment) and isinstance(binding.node, cst.Name)):
        return None
    if binding.scope is None or binding.scope.node is not function:
        return None
    statement, value = single_assignment(module, binding.node)
    if statement is None or not isinstance(value, cst.Call) or module.span(statement)[1] > module.span(move_call)[0]:
        return None
    found = constructor(module, value, named=True)
    if found is None:
        return None
    return Source(found.call, found.callee, receiver, statement, found.keyword_pins)
