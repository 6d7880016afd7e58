"""torch_values: what an expression is (device, dtype, tensor, ...), what `.to()` / `.cuda()` ask for, what lies between a
factory and its move, and what a factory's elements are and become."""

from pathlib import Path

import libcst as cst
import pytest

from optpatch.python_frontend import PythonModule
from optpatch.source import SourceFile
from optpatch.analysis.torch_values import (
    Kind,
    Step,
    Values,
    classify,
    convert,
    factory_elements,
    factory_name,
    factory_numel,
    method_chain,
    move_method,
    on_cpu,
    parse_move,
)

PRELUDE = '''\
import torch
import torch as th
from typing import Optional, Union
from torch import float16 as half_alias, zeros
DEV = torch.device("cpu")
GPU = "cuda:1"
MIXED = torch.device("cpu")
MIXED = torch.float16

def f(a: torch.device, b: str, c: Optional[torch.device], d: "torch.device | None", e: Union[str, int],
      i: int, t: torch.Tensor, dt: torch.dtype, device, local_rank, dtype, x, other):
    local = torch.device("cuda", 0)
    if x:
        local = "cpu"
    index = x.dim() - 1
    tensor = torch.zeros(3)
    cpu_copy = x.cpu()
    first, second = x.device, x.dtype
    pair = x.device, x.dtype
    key = other["device"]
    probe(EXPR)
'''


def value_of(expression: str):
    """Classify `expression` as the argument of `probe(...)` inside PRELUDE's function."""
    code = PRELUDE.replace("EXPR", expression)
    module = PythonModule(SourceFile("probe.py", Path("probe.py"), code.encode(), code, "utf-8", False, "python"))
    call = next(c for c in module.calls() if isinstance(c.func, cst.Name) and c.func.value == "probe")
    return classify(module, call.args[0].value)


@pytest.mark.parametrize(
    "expression, kind, proven",
    [
        ('"cuda:0"', Kind.DEVICE, True),
        ('"cpu"', Kind.DEVICE, True),
        ('"float16"', Kind.UNKNOWN, False),
        ('f"cuda:{i}"', Kind.DEVICE, True),
        ("torch.device('cuda', 1)", Kind.DEVICE, True),
        ("th.device('cpu')", Kind.DEVICE, True),
        ("DEV", Kind.DEVICE, True),
        ("GPU", Kind.DEVICE, True),
        ("a", Kind.DEVICE, True),
        ("b", Kind.DEVICE, True),
        ("c", Kind.DEVICE, True),
        ("e", Kind.DEVICE, True),
        ("local", Kind.DEVICE, True),
        ("x.device", Kind.DEVICE, True),
        ("self.device", Kind.DEVICE, True),
        ("first", Kind.DEVICE, True),
        ("(walrus := DEV)", Kind.DEVICE, True),
        ("0", Kind.INTEGER, True),
        ("i", Kind.INTEGER, True),
        ("index", Kind.INTEGER, True),
        ("len(x)", Kind.INTEGER, True),
        ("x.shape[0]", Kind.INTEGER, True),
        ("torch.cuda.current_device()", Kind.INTEGER, True),
        ("torch.float16", Kind.DTYPE, True),
        ("th.int64", Kind.DTYPE, True),
        ("half_alias", Kind.DTYPE, True),
        ("int", Kind.DTYPE, True),
        ("bool", Kind.DTYPE, True),
        ("dt", Kind.DTYPE, True),
        ("x.dtype", Kind.DTYPE, True),
        ("second", Kind.DTYPE, True),
        ("torch.get_default_dtype()", Kind.DTYPE, True),
        ("t", Kind.TENSOR, True),
        ("tensor", Kind.TENSOR, True),
        ("torch.channels_last", Kind.MEMORY_FORMAT, True),
        ("None", Kind.NONE, True),
        # Only the name suggests what these are: validate at best.
        ("device", Kind.DEVICE, False),
        ("get_accelerator().current_device_name()", Kind.DEVICE, False),
        ("key", Kind.DEVICE, False),
        ("local_rank", Kind.INTEGER, False),
        ("dtype", Kind.DTYPE, False),
        # Nothing says what these are.
        ("x", Kind.UNKNOWN, False),
        ("MIXED", Kind.UNKNOWN, False),
        ("d", Kind.UNKNOWN, False),  # a string annotation is not read
        ("pair", Kind.UNKNOWN, False),
        ("some_call()", Kind.UNKNOWN, False),
    ],
)
def test_classify(expression, kind, proven):
    value = value_of(expression)
    assert (value.kind, value.proven) == (kind, proven), value.evidence


def test_device_type_and_dtype_are_known_when_literal():
    assert value_of('"cuda:1"').device_type == "cuda"
    assert value_of("DEV").device_type == "cpu"
    assert value_of("local").device_type is None  # bound to a CUDA device and to "cpu"
    assert value_of("torch.half").dtype == "torch.half"
    assert value_of("float").dtype == "torch.float64"


def _module(code: str) -> PythonModule:
    return PythonModule(SourceFile("m.py", Path("m.py"), code.encode(), code, "utf-8", False, "python"))


def _first_call(module: PythonModule, predicate):
    return next(c for c in module.calls() if predicate(c))


@pytest.mark.parametrize(
    "code, expected",
    [
        ("import torch\ntorch.zeros(3)", "torch.zeros"),
        ("import torch as t\nt.arange(3)", "torch.arange"),
        ("from torch import ones as o\no(3)", "torch.ones"),
        ("import torch\ntorch.normal(0.0, 1.0, (3,))", "torch.normal"),
        ("import torch\ntorch.normal(mean, std)", None),  # the tensor form has no device=
        ("import torch\ntorch.cat([a, b])", None),
        ("import numpy as np\nnp.zeros(3)", None),
        ("def zeros(n):\n    return n\nzeros(3)", None),
    ],
)
def test_factory_name(code, expected):
    module = _module(code)
    assert factory_name(module, next(module.calls())) == expected


@pytest.mark.parametrize(
    "call, device, dtype, blocked",
    [
        ("x.to(DEV)", "DEV", None, False),
        ("x.to(DEV, torch.half, True)", "DEV", "torch.half", False),
        ("x.to(device=DEV, dtype=torch.half, non_blocking=True)", "DEV", "torch.half", False),
        ("x.to(torch.half)", None, None, True),
        ("x.to(int)", None, None, True),
        ("x.to(other)", None, None, True),
        ("x.to(memory_format=torch.channels_last)", None, None, True),
        ("x.to(DEV, memory_format=torch.channels_last)", None, None, True),
        ("x.to(dtype=torch.half)", None, None, True),
        ("x.to(*args)", None, None, True),
        ("x.cuda()", None, None, False),
        ("x.cuda(1, non_blocking=True)", "1", None, False),
    ],
)
def test_parse_move(call, device, dtype, blocked):
    module = _module(f"import torch\nDEV = torch.device('cpu')\nother: torch.Tensor = torch.ones(1)\n{call}\n")
    move_call = _first_call(module, lambda c: move_method(c) is not None)
    move = parse_move(module, move_call)
    assert (move.blocker is not None) == blocked, move.blocker
    assert (module.text(move.device) if move.device is not None else None) == device
    assert (module.text(move.dtype) if move.dtype is not None else None) == dtype


@pytest.mark.parametrize(
    "template, cpu",
    [("torch.zeros(3)", True), ("y.cpu()", True), ("torch.from_numpy(a)", True), ("local", True),
     ("torch.zeros(3, device=d)", False), ("y", False), ("torch.zeros_like(y)", False)],
)
def test_on_cpu(template, cpu):
    module = _module(f"import torch\ndef f(y, a, d):\n    local = torch.ones(2)\n    probe({template})\n")
    call = _first_call(module, lambda c: isinstance(c.func, cst.Name) and c.func.value == "probe")
    assert (on_cpu(module, call.args[0].value) is not None) == cpu


def _chain(expression: str):
    module = _module(f"import torch\ndef f(n, x, dt: torch.dtype):\n    probe({expression})\n")
    call = _first_call(module, lambda c: isinstance(c.func, cst.Name) and c.func.value == "probe")
    return module, method_chain(module, call.args[0].value)


@pytest.mark.parametrize(
    "expression, root, steps",
    [
        ("torch.arange(n).view(-1, 1).repeat(1, 4).int()", "torch.arange(n)", [Step.VIEW, Step.VIEW, Step.CAST]),
        ("torch.zeros(n).to(torch.int32).t()", "torch.zeros(n)", [Step.CAST, Step.VIEW]),
        ("torch.zeros(n).to(dt).view(x.shape)", "torch.zeros(n)", [Step.CAST, Step.VIEW]),
        ("torch.arange(n).view(torch.int32)", "torch.arange(n)", [Step.OTHER]),
        ("torch.arange(n).view(dt)", "torch.arange(n)", [Step.OTHER]),
        ("torch.arange(n).cumsum(0).float()", "torch.arange(n)", [Step.OTHER, Step.CAST]),
        ("torch.arange(n).int(3)", "torch.arange(n)", [Step.OTHER]),
        # A move to a device ends the chain: it is a site of its own.
        ("torch.zeros(n).to(x.device).float()", "torch.zeros(n).to(x.device)", [Step.CAST]),
        ("torch.zeros(n).cuda().view(-1)", "torch.zeros(n).cuda()", [Step.VIEW]),
        ("x.view(-1).float()", "x.view(-1)", [Step.CAST]),
    ],
)
def test_method_chain(expression, root, steps):
    module, (start, ops) = _chain(expression)
    assert module.text(start) == root
    assert [op.step for op in ops] == steps


def test_casts_name_their_dtype():
    _, (_, ops) = _chain("torch.arange(n).int().to(torch.float16).to(dt).to(dtype=torch.bfloat16)")
    assert [op.dtype for op in ops] == ["torch.int32", "torch.float16", None, "torch.bfloat16"]


def _elements(factory: str):
    module, (root, _) = _chain(factory)
    return factory_elements(module, root, factory_name(module, root))


@pytest.mark.parametrize(
    "factory, values, dtype, low, high",
    [
        ("torch.zeros(n)", Values.ZERO_ONE, "torch.float32", 0, 1),
        ("torch.eye(n, dtype=torch.int8)", Values.ZERO_ONE, "torch.int8", 0, 1),
        ("torch.ones_like(x)", Values.ZERO_ONE, None, 0, 1),
        ("torch.full((n,), 1)", Values.ZERO_ONE, "torch.int64", 0, 1),
        ("torch.full((n,), True)", Values.ZERO_ONE, "torch.bool", 0, 1),
        ("torch.full((n,), -7)", Values.INTEGER, "torch.int64", -7, -7),
        ("torch.full((n,), 300, dtype=torch.int8)", Values.INTEGER, "torch.int8", None, None),
        ("torch.full((n,), 0.5)", Values.REAL, "torch.float32", None, None),
        ("torch.full_like(x, 7)", Values.INTEGER, None, None, None),
        ("torch.arange(n)", Values.INTEGER, "torch.int64", None, None),
        ("torch.arange(10, -2, -3)", Values.INTEGER, "torch.int64", 1, 10),  # 10, 7, 4, 1
        ("torch.arange(0, 4096, 2, dtype=torch.int32)", Values.INTEGER, "torch.int32", 0, 4094),
        ("torch.arange(0.5, n)", Values.REAL, None, None, None),
        ("torch.randint(3, 9, (n,))", Values.INTEGER, "torch.int64", 3, 8),
        ("torch.randperm(100)", Values.INTEGER, "torch.int64", 0, 99),
        ("torch.linspace(0, 1, n)", Values.REAL, "torch.float32", None, None),
        ("torch.randn(n, dtype=torch.float64)", Values.REAL, "torch.float64", None, None),
    ],
)
def test_factory_elements(factory, values, dtype, low, high):
    elements = _elements(factory)
    assert (elements.values, elements.dtype, elements.low, elements.high) == (values, dtype, low, high)


@pytest.mark.parametrize(
    "factory, target, proven",
    [
        ("torch.zeros(n)", "torch.int8", True),
        ("torch.ones_like(x)", None, True),  # 0 and 1 survive any dtype, even an unknown one
        ("torch.arange(n)", "torch.int32", True),  # int64 -> int32 wraps alike everywhere
        ("torch.arange(n)", "torch.bool", True),
        ("torch.arange(0, 4096, 2)", "torch.float32", True),  # every value below 2**24
        ("torch.arange(0, 4096, 2)", "torch.float16", False),  # 4094 > 2048: exact only if bounded; not here
        ("torch.arange(-2048, 2049, 512)", "torch.float16", True),
        ("torch.arange(256)", "torch.bfloat16", True),
        ("torch.arange(n)", "torch.float32", False),  # nothing bounds n
        ("torch.full((n,), 0.5)", "torch.float64", True),  # float32 -> float64 widens
        ("torch.full((n,), 0.5, dtype=torch.bfloat16)", "torch.float32", True),
        ("torch.full((n,), 0.5)", "torch.float16", None),
        ("torch.randn(n)", "torch.int32", None),
        ("torch.arange(n)", None, None),
        ("torch.full_like(x, 7)", "torch.int32", None),  # the template's dtype may be a float
    ],
)
def test_convert(factory, target, proven):
    outcome = convert(_elements(factory), target)
    if proven is None:
        assert isinstance(outcome, str), outcome
    else:
        assert not isinstance(outcome, str), outcome
        assert outcome.proven is proven, outcome.reason


def test_conversions_compose():
    """arange(0, 4096, 2) in float16 is not exact; in float32 it is, and back to int32 it stays exact."""
    as_float = convert(_elements("torch.arange(0, 4096, 2)"), "torch.float32")
    back = convert(as_float.elements, "torch.int32")
    assert back.proven and (back.elements.low, back.elements.high) == (0, 4094)
    assert isinstance(convert(convert(_elements("torch.arange(n)"), "torch.float64").elements, "torch.float16"), str)


@pytest.mark.parametrize(
    "factory, numel",
    [
        ("torch.zeros(3, 4)", 12), ("torch.ones([1])", 1), ("torch.empty((2, 3, 4))", 24), ("torch.zeros(())", 1),
        ("torch.full((16,), 7)", 16), ("torch.eye(32)", 1024), ("torch.eye(2, 5)", 10), ("torch.arange(10)", 10),
        ("torch.arange(1, 10, 2)", 5), ("torch.arange(10, 0, -3)", 4), ("torch.arange(1024, dtype=torch.int32)", 1024),
        ("torch.linspace(0, 1, 50)", 50), ("torch.randint(0, 5, (2, 8))", 16), ("torch.randperm(7)", 7),
        ("torch.zeros(size=(2, 2))", 4), ("torch.zeros(n)", None), ("torch.zeros(*x.shape)", None),
        ("torch.arange(n)", None), ("torch.zeros_like(x)", None), ("torch.linspace(0, 1, n)", None),
    ],
)
def test_factory_numel(factory, numel):
    module, (root, _) = _chain(factory)
    assert factory_numel(module, root, factory_name(module, root)) == numel
