"""OPT202 on a GPU: its rewrites of real launcher forms built with nvcc, run, and timed against the originals.

Usage, on a machine with a CUDA GPU, a CUDA build of torch, nvcc and ninja
(one command, no network, two to three minutes):

    PYTHONPATH=src python3 benchmarks/gpu_opt202.py [--json PATH] [--queue-ms 5]

Writes the same JSON to $OUT/gpu_opt202.json when $OUT is set, and the
rewrite as $OUT/gpu_opt202.diff. Exit status: 0 when every check came out as
expected, 1 when one did not, 2 without a CUDA device (nothing is run).

`gpu_opt202_forms.cu`, beside this file, holds six host functions that copy
a host table to the device with `from_blob(...).to()`: declared into a
local (and the host buffer overwritten right after the copy), sizes spelled
with casts, a `torch::Device(torch::kCUDA, index)` made in place, options
held in a variable, returned directly, and passed to a torch op. optpatch
(this checkout, header-free, every tier accepted as a passing `--validate`
would) rewrites them; the original and the rewrite are built as two torch
extensions, and each function is called on both:

1. Results. With the GPU idle, and again with `--queue-ms` of work queued on
   the current stream (`torch.cuda._sleep`) before the call, each result is
   brought to the host after a full synchronisation and compared exactly
   with the original's. The rewrite must agree in every case: the copy is
   queued on the same stream as the work that reads it, and a pageable
   source is staged before `cudaMemcpyAsync` returns (the `declared` case
   overwrites its buffer right after the copy).
2. Timings. Host time per call, median of 50, idle and with the queue: the
   original's `.to()` from pageable memory waits for the queued work; the
   rewrite should not.

It prints markdown tables headed by the card, the torch and CUDA versions and
the date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FORMS = Path(__file__).with_name("gpu_opt202_forms.cu")
FUNCTIONS = ("declared", "cast_sizes", "made_device", "options_variable", "returned", "argument")
SIZE = 4096
REPEATS = 50


def rewritten(text: str) -> tuple[str, list[dict]]:
    """optpatch's rewrite of `text` with every OPT202 fix applied, and the fixes (line, tier)."""
    from optpatch.config import Settings
    from optpatch.cpp_headers import HeaderSetup
    from optpatch.passes import analyse_file
    from optpatch.policy import FixPolicy, fix_id
    from optpatch.rule import load_rules
    from optpatch.source import SourceFile

    source = SourceFile(FORMS.name, FORMS, text.encode(), text, "utf-8", False, "cpp")
    rules = [rule for rule in load_rules() if rule.code == "OPT202"]
    headers = HeaderSetup(FORMS.parent, enabled=False)
    accepted: frozenset[str] = frozenset()
    while True:
        result = analyse_file(source, rules, Settings(), FixPolicy(unsafe_fixes=True, validated=accepted), headers=headers)
        more = accepted | {fix_id(f) for f in result.findings if f.fix is not None}
        if more == accepted:
            break
        accepted = more
    fixes = [{"line": f.line, "tier": f.fix.tier.value if f.fix else None, "accepted": decision.accepted}
             for f, decision in result.decided]
    return (result.new or source.raw).decode(), fixes


def build(name: str, text: str, directory: Path):
    from torch.utils.cpp_extension import load_inline

    folder = directory / name
    folder.mkdir(parents=True, exist_ok=True)
    declarations = "".join(f"torch::Tensor {function}(torch::Tensor like, int64_t n);\n" for function in FUNCTIONS)
    return load_inline(name, cpp_sources=declarations, cuda_sources=[text], functions=list(FUNCTIONS),
                       build_directory=str(folder), extra_cuda_cflags=["-O2"], verbose=False)


def queue(milliseconds: float, cycles_per_ms: int) -> None:
    import torch

    if milliseconds > 0:
        torch.cuda._sleep(int(milliseconds * cycles_per_ms))


def cycles_per_millisecond() -> int:
    """Clock cycles of `torch.cuda._sleep` per millisecond on this GPU, measured."""
    import torch

    torch.cuda._sleep(1_000_000)  # the first sleep runs before the clocks ramp up
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(100_000_000)
    end.record()
    end.synchronize()
    return int(100_000_000 / start.elapsed_time(end))


def queued_milliseconds(milliseconds: float, cycles: int) -> float:
    """How long the queue `queue(milliseconds)` makes really takes on the GPU."""
    import torch

    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    queue(milliseconds, cycles)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def call(module, function: str, like, queue_ms: float, cycles: int):
    """The result (after a full synchronisation) and the host time of the call, in seconds."""
    import torch

    torch.cuda.synchronize()
    queue(queue_ms, cycles)
    began = time.perf_counter()
    result = getattr(module, function)(like, SIZE)
    spent = time.perf_counter() - began
    torch.cuda.synchronize()
    return result.cpu(), spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--queue-ms", type=float, default=5.0)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_opt202: no CUDA device: nothing run", file=sys.stderr)
        return 2
    original = FORMS.read_text(encoding="utf-8")
    new, fixes = rewritten(original)
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    if out is not None:
        import difflib

        diff = difflib.unified_diff(original.splitlines(True), new.splitlines(True), "a/" + FORMS.name, "b/" + FORMS.name)
        (out / "gpu_opt202.diff").write_text("".join(diff), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="optpatch-gpu-opt202-") as scratch, ThreadPoolExecutor(2) as pool:
        began = time.perf_counter()
        before_job = pool.submit(build, "opt202_original", original, Path(scratch))
        after_job = pool.submit(build, "opt202_rewritten", new, Path(scratch))
        before, after = before_job.result(), after_job.result()
        build_seconds = time.perf_counter() - began
    like = torch.empty(1, device="cuda")
    cycles = cycles_per_millisecond()
    measured_queue = statistics.median(queued_milliseconds(args.queue_ms, cycles) for _ in range(5))
    rows, failures = [], []
    for function in FUNCTIONS:
        for module in (before, after):  # warm both: the first call pays for lazy initialisation
            getattr(module, function)(like, SIZE)
        row = {"function": function}
        for label, queue_ms in (("idle", 0.0), ("queued", args.queue_ms)):
            times = {"original": [], "rewrite": []}
            for _ in range(REPEATS):
                expected, spent = call(before, function, like, queue_ms, cycles)
                times["original"].append(spent)
                got, spent = call(after, function, like, queue_ms, cycles)
                times["rewrite"].append(spent)
                if not torch.equal(expected, got):
                    failures.append(f"{function} ({label}): the rewrite's result differs")
                    break
            row[label] = {side: statistics.median(values) * 1e6 for side, values in times.items()}
        rows.append(row)
    if "declared" in FUNCTIONS:
        expected = (torch.arange(SIZE, dtype=torch.int64) * 3 + 1) * 2
        got, _ = call(after, "declared", like, args.queue_ms, cycles)
        if not torch.equal(got, expected):
            failures.append("declared: the rewrite read the host buffer after it was overwritten")
    applied = [f for f in fixes if f["accepted"]]
    if len(applied) != len(FUNCTIONS):
        failures.append(f"{len(applied)} of {len(FUNCTIONS)} forms rewritten: {fixes}")
    report = {
        "date": datetime.date.today().isoformat(), "card": torch.cuda.get_device_name(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "queue_ms": args.queue_ms, "queue_ms_measured": round(measured_queue, 2), "size": SIZE, "repeats": REPEATS,
        "build_seconds": round(build_seconds, 1), "fixes": fixes, "rows": rows, "failures": failures,
    }
    print(f"{report['card']}, torch {report['torch']}, CUDA {report['cuda']}, {report['date']}; "
          f"{len(applied)} forms rewritten (tiers: {', '.join(sorted({str(f['tier']) for f in applied}))}); "
          f"both extensions built in {build_seconds:.0f} s")
    print(f"\n| form | idle: original us | idle: rewrite us | {measured_queue:.1f} ms queued: original us | queued: rewrite us | results |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        same = "differ" if any(f.startswith(row["function"] + " ") for f in failures) else "identical"
        print(f"| `{row['function']}` | {row['idle']['original']:.0f} | {row['idle']['rewrite']:.0f} | "
              f"{row['queued']['original']:.0f} | {row['queued']['rewrite']:.0f} | {same} |")
    for failure in failures:
        print(f"FAILED: {failure}")
    document = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(document)
    if out is not None:
        (out / "gpu_opt202.json").write_text(document)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
