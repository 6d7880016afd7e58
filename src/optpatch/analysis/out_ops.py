"""The torch operators whose `out=` receives their whole result: read from PyTorch's own operator schemas.

Every ATen operator with an `out` overload computes its result and writes
all of it into `out`, resizing `out` first when its shape differs. Which
public functions have one is a fact of the installed PyTorch, so it is not
written by hand: `schema_out_ops()` derives it from
`torch._C._jit_get_all_schemas()`, and `out_ops.json` beside this module
holds the result for the torch the tests use, shipped with the package
(torch stays optional at run time). tests/python/test_out_ops.py fails when
the file and the installed torch disagree; regenerate it with

    python -m optpatch.analysis.out_ops --write

A function is listed when it is the direct binding of an ATen operator
(`torch.X`, `torch.linalg.X`, `torch.special.X`, `torch.fft.X`, a builtin, not
a Python wrapper) with an out overload, together with the numbers of tensors
its out overloads take (`torch.topk`: 2, `out=(values, indices)`). Left out:
private names, overloads whose `out` is a list of tensors, the `empty*`
factories (their `out=` is resized and left uninitialised) and `from_file`
(its values come from a file).
"""

from __future__ import annotations

import json
import sys
from functools import cache
from importlib import resources

DATA_FILE = "out_ops.json"
# (module, prefix of the ATen name): `aten::linalg_vector_norm` is `torch.linalg.vector_norm`.
_NAMESPACES = (("torch.linalg", "linalg_"), ("torch.special", "special_"), ("torch.fft", "fft_"), ("torch", ""))
_NOT_WRITTEN = ("empty", "from_file")  # operators whose `out=` does not receive computed values (name prefixes)


@cache
def out_ops() -> dict[str, frozenset[int]]:
    """Qualified function name -> the numbers of `out` tensors its overloads take, from the shipped data file."""
    data = json.loads(resources.files("optpatch.analysis").joinpath(DATA_FILE).read_text(encoding="utf-8"))
    return {name: frozenset(counts) for name, counts in data["ops"].items()}


def schema_out_ops() -> dict:
    """The data file's content for the installed torch (imports torch)."""
    import torch

    counts: dict[str, set[int]] = {}
    for schema in torch._C._jit_get_all_schemas():
        namespace, _, operator = schema.name.partition("::")
        outs = [argument for argument in schema.arguments if argument.is_out]
        if namespace != "aten" or not outs or operator.startswith("_") or operator.startswith(_NOT_WRITTEN):
            continue
        if any(str(argument.type).startswith("List[") or str(argument.type).endswith("[]") for argument in outs):
            continue
        name = _public_name(torch, operator)
        if name is not None:
            counts.setdefault(name, set()).add(len(outs))
    version = torch.__version__.split("+")[0]
    return {"torch": version, "ops": {name: sorted(counts[name]) for name in sorted(counts)}}


def _public_name(torch, operator: str) -> str | None:
    for module_name, prefix in _NAMESPACES:
        if not operator.startswith(prefix):
            continue
        module = sys.modules.get(module_name) or getattr(torch, module_name.rpartition(".")[2], None)
        function = getattr(module, operator[len(prefix):], None)
        if function is not None and type(function).__name__ == "builtin_function_or_method":
            return f"{module_name}.{operator[len(prefix):]}"
    return None


def render(data: dict) -> str:
    """The data file's text: one operator a line, so that a torch upgrade reads as a short diff."""
    lines = [f"  {json.dumps(name)}: {json.dumps(counts)}" for name, counts in data["ops"].items()]
    return '{\n "torch": ' + json.dumps(data["torch"]) + ',\n "ops": {\n' + ",\n".join(lines) + "\n }\n}\n"


def main(argv: list[str]) -> int:
    target = resources.files("optpatch.analysis").joinpath(DATA_FILE)
    text = render(schema_out_ops())
    if argv[1:] == ["--write"]:
        with open(str(target), "w", encoding="utf-8") as stream:
            stream.write(text)
        print(f"wrote {target}")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
