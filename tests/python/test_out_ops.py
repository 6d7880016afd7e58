"""The `out=` operators OPT101 trusts come from PyTorch's own schemas (analysis/out_ops.py), kept current by this test."""

import pytest
import torch

from optpatch.analysis.out_ops import out_ops, render, schema_out_ops
from optpatch.poison import MODES, poisoned


def test_the_shipped_file_matches_the_torch_the_tests_use():
    """Fails after a torch upgrade: run `python -m optpatch.analysis.out_ops --write` and commit the file."""
    from importlib import resources

    shipped = resources.files("optpatch.analysis").joinpath("out_ops.json").read_text(encoding="utf-8")
    assert shipped == render(schema_out_ops())


def test_the_file_lists_reductions_index_ops_and_tuple_outs_and_leaves_out_what_writes_no_values():
    ops = out_ops()
    for name, counts in [("torch.sum", {1}), ("torch.argmax", {1}), ("torch.topk", {2}), ("torch.sort", {2}),
                         ("torch.max", {1, 2}), ("torch.aminmax", {2}), ("torch.linalg.vector_norm", {1})]:
        assert ops[name] == counts, name
    assert not {"torch.empty", "torch.empty_like", "torch.empty_strided", "torch.from_file", "torch.split_copy"} & ops.keys()
    assert not any(name.rpartition(".")[2].startswith("_") for name in ops)


# One call per shape of output: a reduction with `dim`, an index op, tuple outs, an op that concatenates.
CALLS = {
    "torch.sum": lambda a, **out: torch.sum(a, dim=1, **out),
    "torch.argmax": lambda a, **out: torch.argmax(a, dim=0, **out),
    "torch.cumsum": lambda a, **out: torch.cumsum(a, dim=1, **out),
    "torch.topk": lambda a, **out: torch.topk(a.flatten(), 3, **out),
    "torch.max": lambda a, **out: torch.max(a, dim=1, **out),
    "torch.sort": lambda a, **out: torch.sort(a, dim=0, **out),
    "torch.cat": lambda a, **out: torch.cat([a, a], **out),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("resized", [False, True], ids=["same-shape", "resized"])
@pytest.mark.parametrize("name", CALLS)
def test_a_sampled_listed_op_writes_all_of_a_poisoned_out(name, resized, mode):
    """`out=` buffers from a poisoned `empty`, of the result's shape or not, end up equal to the result."""
    call = CALLS[name]
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5
    expected = call(a)
    results = expected if isinstance(expected, tuple) else (expected,)
    assert len(results) in out_ops()[name]
    with poisoned(mode):
        outs = tuple(torch.empty(0 if resized else r.shape, dtype=r.dtype) for r in results)
        call(a, out=outs if len(outs) > 1 else outs[0])
    for out, result in zip(outs, results):
        assert torch.equal(out, result), (name, out, result)
