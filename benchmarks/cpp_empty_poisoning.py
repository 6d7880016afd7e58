"""Does torch's uninitialised-memory poisoning reach `at::empty` called from a C++ extension?

OPT203 (`torch::zeros` -> `torch::empty` in C++/CUDA host code) leaves its
validate-tier fixes to `--validate`, which runs the project's tests with
`torch.use_deterministic_algorithms(True)` and
`torch.utils.deterministic.fill_uninitialized_memory = True`. That only
finds an element a kernel forgot to write if the poison fills memory that
an extension allocates in C++, not just memory allocated from Python.

This script builds a tiny CPU extension (g++, through
torch.utils.cpp_extension.load_inline: about 20-40 s) whose functions return
`at::empty`, `torch::empty` and `at::empty_like` results untouched, and
prints what they hold with the poison off and on, for float, double, half
and int64. Run:

    PYTHONPATH=src .venv/bin/python benchmarks/cpp_empty_poisoning.py

It prints a table and one JSON line; docs/validation.md records the result.
"""

from __future__ import annotations

import json
import platform
import tempfile
import time

import torch
from torch.utils import cpp_extension

SOURCE = r"""
#include <torch/extension.h>

at::Tensor at_empty(int64_t n, at::ScalarType dtype) { return at::empty({n}, at::TensorOptions().dtype(dtype)); }
torch::Tensor torch_empty(int64_t n, at::ScalarType dtype) { return torch::empty({n}, torch::dtype(dtype)); }
at::Tensor at_empty_like(const at::Tensor& like) { return at::empty_like(like); }
"""
FUNCTIONS = ("at_empty", "torch_empty", "at_empty_like")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.int64)
SIZE = 1 << 16


def poisoned(values: torch.Tensor) -> bool:
    """Every element holds the poison: NaN for floating types, the largest value for integers."""
    if values.dtype.is_floating_point:
        return bool(torch.isnan(values).all())
    return bool((values == torch.iinfo(values.dtype).max).all())


def allocate(module, function: str, dtype: torch.dtype) -> torch.Tensor:
    if function == "at_empty_like":
        return module.at_empty_like(torch.ones(SIZE, dtype=dtype))  # ones: memory reused from it cannot pass
    return getattr(module, function)(SIZE, dtype)


def main() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as build:
        module = cpp_extension.load_inline(
            "optpatch_empty_poisoning", cpp_sources=SOURCE, functions=list(FUNCTIONS), build_directory=build,
            verbose=False,
        )
        built_s = time.monotonic() - started
        rows = []
        for poison in (False, True):
            torch.use_deterministic_algorithms(poison)
            torch.utils.deterministic.fill_uninitialized_memory = poison
            for function in FUNCTIONS:
                for dtype in DTYPES:
                    values = allocate(module, function, dtype)
                    rows.append({"poison": poison, "function": function, "dtype": str(dtype).removeprefix("torch."),
                                 "all_poisoned": poisoned(values)})
        torch.use_deterministic_algorithms(False)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.processor() or platform.machine()}; "
          f"extension built in {built_s:.1f} s")
    print(f"{'poison':<7} {'function':<14} {'dtype':<9} every element poisoned")
    for row in rows:
        print(f"{str(row['poison']):<7} {row['function']:<14} {row['dtype']:<9} {row['all_poisoned']}")
    on = [row["all_poisoned"] for row in rows if row["poison"]]
    summary = {"torch": torch.__version__, "build_s": round(built_s, 1), "poisoned_when_on": all(on), "rows": rows}
    print(json.dumps(summary))
    if not all(on):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
