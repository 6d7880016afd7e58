"""What optpatch knows about PyTorch calls, for the Python rules.

Facts here are about meaning (which qualified names are factories, which
dtypes are integers); rules use them instead of matching text.
"""

from __future__ import annotations

import libcst as cst

from optpatch.python_frontend import walk

INTEGER_DTYPES = frozenset(
    f"torch.{name}" for name in ("int", "long", "int8", "int16", "int32", "int64", "uint8", "short", "bool")
)
# Calls in size arguments that pad a buffer beyond what its writer fills.
PADDING_CALLS = ("round_up", "roundup", "cdiv", "ceil_div", "div_up", "align", "pad", "next_power_of_2")


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def string_value(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def padded_size_call(call: cst.Call) -> str | None:
    """The padding helper named in the size arguments, if any (`round_up`, `cdiv`, ...)."""
    for arg in call.args:
        if arg.keyword is not None:
            continue
        for node in walk(arg.value):
            if isinstance(node, cst.Call):
                func = node.func
                name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
                if any(name.lower().startswith(p) or name.lower().endswith(p) for p in PADDING_CALLS):
                    return name
    return None

