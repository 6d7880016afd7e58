"""torch_values: what an expression is (device, dtype, tensor, ...), and what `.to()` / `.cuda()` ask for."""

from pathlib import Path

import libcst as cst
import pytest

from optpatch.python_frontend import PythonModule
from optpatch.source import SourceFile
from optpatch.analysis.torch_values import Kind, classify, factory_name, move_method, on_cpu, parse_move

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
