"""What each kind of OPT102 fix buys on a GPU, by factory and size, and whether the device computes the same values.

Usage (on a CUDA machine): python benchmarks/opt102_kinds.py [--json PATH]

Part 1, timings: for every fix kind OPT102 makes (each factory; the chains
of issue 18, where a view or a cast sits between the factory and the move;
`*_like` of a template on the CPU and on the device; `from_numpy` ->
`as_tensor`), the host time per call of the original (built on the host,
then moved) and of the rewrite (built on the device), at 1, 16, 1,024,
65,536 and 1,048,576 elements: idle (median of 200 calls after warm-up,
queue empty before each) and with ~5 ms of GPU work queued ahead of the call
(median of 20, time to return).

Part 2, values: each rewrite computes exactly what the original did
(`torch.equal` on the device, NaN-free inputs): the chains and their casts at
large values (integers above 2^24 cast to float32, above 2048 to float16, to
bfloat16), `linspace` and `arange` at the sizes of part 1, and what
`.cuda(-1)` and `device="cuda:-1"` do (OPT102 spells `.cuda(i)` as
`device=f"cuda:{i}"`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from gpu_impact import host_us, queued_return_us  # noqa: E402

SIZES = (1, 16, 1024, 65536, 1 << 20)
CUDA = "cuda"


def timing_cases():
    """(kind, case, elements, original, rewritten): the two forms as zero-argument functions."""
    for n in SIZES:
        side = max(1, round(n ** 0.5))
        yield "constant", "zeros", n, lambda n=n: torch.zeros(n).cuda(), lambda n=n: torch.zeros(n, device=CUDA)
        yield "constant", "ones", n, lambda n=n: torch.ones(n).cuda(), lambda n=n: torch.ones(n, device=CUDA)
        yield "constant", "empty", n, lambda n=n: torch.empty(n).cuda(), lambda n=n: torch.empty(n, device=CUDA)
        yield "constant", "full", n, lambda n=n: torch.full((n,), 7).cuda(), lambda n=n: torch.full((n,), 7, device=CUDA)
        yield "constant", "eye", side * side, lambda s=side: torch.eye(s).cuda(), lambda s=side: torch.eye(s, device=CUDA)
        yield "range", "arange", n, lambda n=n: torch.arange(n).cuda(), lambda n=n: torch.arange(n, device=CUDA)
        yield "range", "linspace", n, (lambda n=n: torch.linspace(0, 1, n).cuda()), (lambda n=n: torch.linspace(0, 1, n, device=CUDA))
    for n in (1024, 1 << 20):
        yield "random", "randn", n, lambda n=n: torch.randn(n).cuda(), lambda n=n: torch.randn(n, device=CUDA)
        yield "random", "randint", n, (lambda n=n: torch.randint(0, 100, (n,)).cuda()), (lambda n=n: torch.randint(0, 100, (n,), device=CUDA))
        yield "random", "randperm", n, lambda n=n: torch.randperm(n).cuda(), lambda n=n: torch.randperm(n, device=CUDA)
        host, device = torch.ones(n), torch.ones(n, device=CUDA)
        yield "like", "zeros_like(cpu template)", n, (lambda t=host: torch.zeros_like(t).cuda()), (lambda t=host: torch.zeros_like(t, device=CUDA))
        yield "like", "zeros_like(cuda template)", n, (lambda t=device: torch.zeros_like(t).cuda()), (lambda t=device: torch.zeros_like(t, device=CUDA))
        yield "chain", "arange(n).int()", n, (lambda n=n: torch.arange(n).int().cuda()), (lambda n=n: torch.arange(n, device=CUDA).int())
        yield "chain", "arange(n).view(-1, 1).repeat(1, 4).view(-1)", 4 * n, (
            lambda n=n: torch.arange(n).view(-1, 1).repeat(1, 4).view(-1).cuda()), (
            lambda n=n: torch.arange(n, device=CUDA).view(-1, 1).repeat(1, 4).view(-1))
        yield "chain", "zeros(n).to(torch.int32)", n, (
            lambda n=n: torch.zeros(n).to(torch.int32).cuda()), (lambda n=n: torch.zeros(n, device=CUDA).to(torch.int32))
        yield "chain", "arange(0, n, 2).float()", n // 2, (
            lambda n=n: torch.arange(0, n, 2).float().cuda()), (lambda n=n: torch.arange(0, n, 2, device=CUDA).float())
        array = np.ones(n, dtype=np.float32)
        yield "from_numpy", "from_numpy(a) -> as_tensor(a, device=)", n, (
            lambda a=array: torch.from_numpy(a).cuda()), (lambda a=array: torch.as_tensor(a, device=CUDA))
    values = list(range(1024))
    yield "data", "tensor(list) -> device=", 1024, (lambda: torch.tensor(values).cuda()), (lambda: torch.tensor(values, device=CUDA))


def value_cases():
    """(case, original, rewritten): each pair must give equal tensors on the device."""
    big = 1 << 25  # above float32's exact integers (2^24)
    yield "arange(n).int()", lambda: torch.arange(1 << 20).int().cuda(), lambda: torch.arange(1 << 20, device=CUDA).int()
    yield "arange(2^25, 2^25 + 2^20).float() (beyond 2^24)", (
        lambda: torch.arange(big, big + (1 << 20)).float().cuda()), (lambda: torch.arange(big, big + (1 << 20), device=CUDA).float())
    yield "arange(2^20).half() (beyond 2048)", lambda: torch.arange(1 << 20).half().cuda(), lambda: torch.arange(1 << 20, device=CUDA).half()
    yield "arange(2^20).bfloat16() (beyond 256)", (
        lambda: torch.arange(1 << 20).bfloat16().cuda()), (lambda: torch.arange(1 << 20, device=CUDA).bfloat16())
    yield "arange(-2^40, 2^40, 2^21).int() (wraps)", (
        lambda: torch.arange(-(1 << 40), 1 << 40, 1 << 21).int().cuda()), (lambda: torch.arange(-(1 << 40), 1 << 40, 1 << 21, device=CUDA).int())
    yield "arange(2^62, 2^62 + 2^20).float()", (
        lambda: torch.arange(1 << 62, (1 << 62) + (1 << 20)).float().cuda()), (lambda: torch.arange(1 << 62, (1 << 62) + (1 << 20), device=CUDA).float())
    yield "arange(n).view(-1, 1).repeat(1, 4).view(-1)", (
        lambda: torch.arange(4096).view(-1, 1).repeat(1, 4).view(-1).cuda()), (lambda: torch.arange(4096, device=CUDA).view(-1, 1).repeat(1, 4).view(-1))
    yield "zeros_like(t).float() of an int template", (
        lambda: torch.zeros_like(torch.ones(64, dtype=torch.int8)).float().cuda()), (
        lambda: torch.zeros_like(torch.ones(64, dtype=torch.int8), device=CUDA).float())
    yield "ones(a, b).to(torch.int32)", lambda: torch.ones(33, 7).to(torch.int32).cuda(), lambda: torch.ones(33, 7, device=CUDA).to(torch.int32)
    yield "full((n,), 7).half()", lambda: torch.full((1000,), 7).half().cuda(), lambda: torch.full((1000,), 7, device=CUDA).half()
    yield "eye(300).bool()", lambda: torch.eye(300).bool().cuda(), lambda: torch.eye(300, device=CUDA).bool()
    for n in SIZES:
        yield f"linspace(0, 1, {n})", (lambda n=n: torch.linspace(0, 1, n).cuda()), (lambda n=n: torch.linspace(0, 1, n, device=CUDA))
        yield f"linspace(-7, 3, {n}).double()", (
            lambda n=n: torch.linspace(-7, 3, n).double().cuda()), (lambda n=n: torch.linspace(-7, 3, n, device=CUDA).double())
        yield f"arange({n})", (lambda n=n: torch.arange(n).cuda()), (lambda n=n: torch.arange(n, device=CUDA))


def cuda_minus_one() -> str:
    """What `.cuda(-1)` and its rewrite `device=f"cuda:{-1}"` do: both must fail alike, or the rewrite is wrong."""
    outcomes = []
    for label, function in (("t.cuda(-1)", lambda: torch.zeros(2).cuda(-1)), ('device="cuda:-1"', lambda: torch.zeros(2, device="cuda:-1"))):
        try:
            outcomes.append(f"{label}: {function().device}")
        except Exception as error:  # the point is which error each form raises
            outcomes.append(f"{label}: {type(error).__name__}: {error}")
    return "; ".join(outcomes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.cuda.init()
    rows = []
    for kind, case, elements, original, rewritten in timing_cases():
        rows.append({
            "kind": kind, "case": case, "elements": elements,
            "idle_original_us": host_us(original), "idle_rewritten_us": host_us(rewritten),
            "queued_original_us": queued_return_us(original), "queued_rewritten_us": queued_return_us(rewritten),
        })
    checks = []
    for case, original, rewritten in value_cases():
        a, b = original(), rewritten()
        torch.cuda.synchronize()
        same = a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))
        checks.append({"case": case, "identical": same, "differing": 0 if same else int((a != b).sum().item())})
    minus_one = cuda_minus_one()

    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print("host time per call, us: idle (median of 200) and with 5 ms of GPU work queued (median of 20)")
    print(f"{'kind':<11} {'case':<46} {'elements':>9} {'idle orig':>10} {'idle new':>9} {'x':>6} {'queued orig':>12} {'queued new':>11}")
    for r in rows:
        speedup = r["idle_original_us"] / r["idle_rewritten_us"]
        print(f"{r['kind']:<11} {r['case']:<46} {r['elements']:>9} {r['idle_original_us']:>10.1f} {r['idle_rewritten_us']:>9.1f} "
              f"{speedup:>5.1f}x {r['queued_original_us']:>12.1f} {r['queued_rewritten_us']:>11.1f}")
    print()
    print(f"{'values: original vs rewrite on the device':<60} {'identical':>9}")
    for c in checks:
        print(f"{c['case']:<60} {'yes' if c['identical'] else 'NO (' + str(c['differing']) + ' differ)':>9}")
    print(minus_one)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
            "timings": rows, "values": checks, "cuda_minus_one": minus_one,
        }, indent=2))


if __name__ == "__main__":
    main()
