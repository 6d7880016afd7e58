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



# -- factories (OPT102 and later rules) --------------------------------------------------------
# Every factory below takes `device=` as a keyword only (as_tensor also took it
# positionally in older releases: callers check the positional count).

# Values that do not depend on the device that computes them: 0, 1, a host
# fill value, or nothing at all (empty).
CONSTANT_FACTORIES = frozenset(f"torch.{name}" for name in ("zeros", "ones", "empty", "full", "eye"))
# Values computed by the device's own kernel from a start and a step.
RANGE_FACTORIES = frozenset(f"torch.{name}" for name in ("arange", "linspace", "logspace"))
# Shape, dtype and layout from a template tensor; the result lands on the template's device.
LIKE_FACTORIES = frozenset(f"torch.{name}" for name in ("zeros_like", "ones_like", "empty_like", "full_like"))
# Values drawn from the generator of the device they are created on.
RANDOM_FACTORIES = frozenset(
    f"torch.{name}" for name in ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like")
)
# Values copied from host data.
DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
FACTORIES = CONSTANT_FACTORIES | RANGE_FACTORIES | LIKE_FACTORIES | RANDOM_FACTORIES | DATA_FACTORIES
# The legacy CPU tensor types and their dtypes. `torch.LongTensor(list)` copies a list into a CPU tensor of
# that dtype, as `torch.tensor` does (with an integer it makes an uninitialised tensor of that size instead, and
# with a tensor it shares it); `x.type(torch.IntTensor)` converts to the dtype and moves to the CPU.
LEGACY_TENSOR_TYPES = {
    "torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64", "torch.HalfTensor": "torch.float16",
    "torch.BFloat16Tensor": "torch.bfloat16", "torch.ByteTensor": "torch.uint8", "torch.CharTensor": "torch.int8",
    "torch.ShortTensor": "torch.int16", "torch.IntTensor": "torch.int32", "torch.LongTensor": "torch.int64",
    "torch.BoolTensor": "torch.bool",
}
# `torch.cuda.LongTensor(list)`: the list converted on the host, then copied to the current CUDA device.
CUDA_LEGACY_TENSOR_TYPES = {f"torch.cuda.{name.removeprefix('torch.')}": name for name in LEGACY_TENSOR_TYPES}
# Factories whose every element is 0, 1 or uninitialised: exact in any dtype.
ZERO_ONE_FACTORIES = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "empty", "eye", "zeros_like", "ones_like", "empty_like")
)

# -- tensor methods between a factory and its move (OPT102's chains) ---------------------------
# Methods that rearrange, repeat or copy elements without computing new values: the same result on
# every device. (`view` with a dtype reinterprets bits instead: torch_values.chain_op tells them apart.)
VIEW_METHODS = frozenset(
    ("view", "reshape", "repeat", "expand", "unsqueeze", "squeeze", "flatten", "permute", "transpose", "t",
     "contiguous", "clone", "detach")
)
# Methods that convert to one dtype, and that dtype.
CAST_METHODS = {
    "bool": "torch.bool", "byte": "torch.uint8", "char": "torch.int8", "short": "torch.int16", "int": "torch.int32",
    "long": "torch.int64", "half": "torch.float16", "bfloat16": "torch.bfloat16", "float": "torch.float32",
    "double": "torch.float64",
}

# dtype -> (kind, bits). Kinds: bool, int (signed), uint, float, bfloat, complex.
DTYPES: dict[str, tuple[str, int]] = {
    "torch.bool": ("bool", 1),
    "torch.uint8": ("uint", 8), "torch.uint16": ("uint", 16), "torch.uint32": ("uint", 32), "torch.uint64": ("uint", 64),
    "torch.int8": ("int", 8), "torch.int16": ("int", 16), "torch.short": ("int", 16),
    "torch.int32": ("int", 32), "torch.int": ("int", 32), "torch.int64": ("int", 64), "torch.long": ("int", 64),
    "torch.float16": ("float", 16), "torch.half": ("float", 16), "torch.bfloat16": ("bfloat", 16),
    "torch.float32": ("float", 32), "torch.float": ("float", 32), "torch.float64": ("float", 64), "torch.double": ("float", 64),
    "torch.complex32": ("complex", 32), "torch.chalf": ("complex", 32), "torch.complex64": ("complex", 64),
    "torch.cfloat": ("complex", 64), "torch.complex128": ("complex", 128), "torch.cdouble": ("complex", 128),
    "torch.float8_e4m3fn": ("float8", 8), "torch.float8_e5m2": ("float8", 8),
    "torch.float8_e4m3fnuz": ("float8", 8), "torch.float8_e5m2fnuz": ("float8", 8),
}
# `t.to(int)` and friends: Python's scalar types name dtypes too.
PYTHON_SCALAR_DTYPES = {
    "builtins.int": "torch.int64", "builtins.float": "torch.float64",
    "builtins.bool": "torch.bool", "builtins.complex": "torch.complex128",
}
MEMORY_FORMATS = frozenset(
    f"torch.{name}" for name in ("channels_last", "channels_last_3d", "contiguous_format", "preserve_format")
)
# Device types torch.device() accepts, as the first part of a device string.
DEVICE_TYPES = frozenset(
    ("cpu", "cuda", "mps", "xpu", "meta", "hpu", "npu", "xla", "mtia", "ipu", "privateuseone", "vulkan",
     "lazy", "ve", "fpga", "maia", "ort", "ideep", "mkldnn", "opengl", "opencl", "hip", "msnpu")
)
# Calls that return a device index.
INDEX_CALLS = frozenset(
    {"torch.cuda.current_device", "torch.distributed.get_rank", "torch.distributed.get_local_rank",
     "torch.xpu.current_device", "torch.accelerator.current_device_index"}
)
DEVICE_CALLS = frozenset({"torch.device", "torch.get_default_device"})
DTYPE_CALLS = frozenset({"torch.get_default_dtype", "torch.promote_types", "torch.result_type"})


def exact_in(source: str, target: str) -> bool:
    """True when every value of dtype `source` converts to `target` unchanged (an integer to a wider integer)."""
    if source == target or DTYPES.get(source) == DTYPES.get(target) and source in DTYPES:
        return True
    source_kind, source_bits = DTYPES.get(source, ("", 0))
    target_kind, target_bits = DTYPES.get(target, ("", 0))
    if source_kind == "bool":
        return target_kind != ""
    if source_kind == target_kind and source_kind in ("int", "uint"):
        return target_bits >= source_bits
    return source_kind == "uint" and target_kind == "int" and target_bits > source_bits


# Bits of precision (the significand, with its hidden bit) of the floating dtypes: every integer of
# magnitude up to 2**bits is exact there. Complex dtypes hold two floats of half their width.
_SIGNIFICAND_BITS = {("float", 16): 11, ("bfloat", 16): 8, ("float", 32): 24, ("float", 64): 53,
                     ("complex", 32): 11, ("complex", 64): 24, ("complex", 128): 53}


def integer_range(dtype: str) -> tuple[int, int] | None:
    """The integers that `dtype` holds exactly, as (lowest, highest); None for a dtype this table lacks."""
    kind, bits = DTYPES.get(dtype, ("", 0))
    if kind == "bool":
        return 0, 1
    if kind == "int":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if kind == "uint":
        return 0, (1 << bits) - 1
    significand = _SIGNIFICAND_BITS.get((kind, bits))
    return (-(1 << significand), 1 << significand) if significand else None


def is_integer_dtype(dtype: str) -> bool:
    """bool, int and uint dtypes: converting to them from an integer dtype wraps, never rounds."""
    return DTYPES.get(dtype, ("", 0))[0] in ("bool", "int", "uint")


def widens_float(source: str, target: str) -> bool:
    """True when every value of the floating dtype `source` is a value of the floating dtype `target`."""
    source_kind, source_bits = DTYPES.get(source, ("", 0))
    target_kind, target_bits = DTYPES.get(target, ("", 0))
    if source_kind not in ("float", "bfloat") or target_kind != "float":
        return False
    if source_kind == "bfloat":
        return target_bits >= 32  # bfloat16 has float32's exponent range and fewer bits
    return target_bits >= source_bits
