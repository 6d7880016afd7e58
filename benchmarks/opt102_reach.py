"""What issue 29's new OPT102/OPT103 forms buy on a GPU, and that each rewrite computes what the original did.

Usage (on a CUDA machine): python benchmarks/opt102_reach.py [--json PATH]

For each form, the host time per call of the original and of the rewrite
optpatch writes, idle (median of 200 calls, queue empty before each) and with
~5 ms of GPU work queued ahead (median of 20, time to return), then
`torch.equal` of the two results (and their devices and dtypes):

- index tensors: `t[torch.arange(n)]` -> `t[torch.arange(n, device=t.device)]`
  (a CPU index used on a CUDA tensor is copied to the device at each use);
- dtype chains: `torch.zeros(b, n).type(torch.IntTensor).to(d)` ->
  `torch.zeros(b, n, dtype=torch.int32, device=d)`, and
  `torch.arange(n).view(-1, 1).type(torch.IntTensor).to(d)` ->
  `torch.arange(n, device=d).view(-1, 1).type(torch.int32)`;
- legacy constructors: `torch.LongTensor(ids).cuda()` ->
  `torch.LongTensor(ids).pin_memory().cuda(non_blocking=True)` (OPT103), read on
  the same stream;
- `torch.tensor(ids, device=d)` -> `torch.tensor(ids, pin_memory=True).to(d,
  non_blocking=True)` (OPT103).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from gpu_impact import host_us, queued_return_us  # noqa: E402

CUDA = torch.device("cuda")


def cases():
    """(form, elements, original, rewritten): the two forms as zero-argument functions."""
    for n in (1024, 65536, 1 << 20):
        table = torch.randn(n, 8, device=CUDA)
        yield "index: t[arange(n)]", n, (lambda t=table, n=n: t[torch.arange(n)]), (
            lambda t=table, n=n: t[torch.arange(n, device=t.device)])
        yield "chain: zeros(b, n).type(IntTensor)", n, (lambda n=n: torch.zeros(4, n // 4).type(torch.IntTensor).to(CUDA)), (
            lambda n=n: torch.zeros(4, n // 4, dtype=torch.int32, device=CUDA))
        yield "chain: arange(n).view(-1, 1).type(IntTensor)", n, (
            lambda n=n: torch.arange(n).view(-1, 1).type(torch.IntTensor).to(CUDA)), (
            lambda n=n: torch.arange(n, device=CUDA).view(-1, 1).type(torch.int32))
    for n in (16, 1024):
        ids = list(range(n))
        yield "legacy: LongTensor(ids).cuda()", n, (lambda ids=ids: torch.LongTensor(ids).cuda() + 1), (
            lambda ids=ids: torch.LongTensor(ids).pin_memory().cuda(non_blocking=True) + 1)
        yield "tensor(ids, device=d)", n, (lambda ids=ids: torch.tensor(ids, device=CUDA) + 1), (
            lambda ids=ids: torch.tensor(ids, pin_memory=True).to(CUDA, non_blocking=True) + 1)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device == b.device and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 2
    rows = []
    for form, n, original, rewritten in cases():
        equal = same(original(), rewritten())
        torch.cuda.synchronize()
        rows.append({"form": form, "elements": n, "equal": equal,
                     "idle_us": [host_us(original), host_us(rewritten)],
                     "queued_us": [queued_return_us(original), queued_return_us(rewritten)]})
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    print(f"{'form':<46} {'elements':>9} {'idle us (before -> after)':>27} {'5 ms queued us':>22} equal")
    for row in rows:
        idle, queued = row["idle_us"], row["queued_us"]
        print(f"{row['form']:<46} {row['elements']:>9,} {idle[0]:>12.1f} -> {idle[1]:>10.1f} "
              f"{queued[0]:>9.1f} -> {queued[1]:>9.1f} {row['equal']}")
    if args.json:
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                         "rows": rows}, indent=1))
    return 0 if all(row["equal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
