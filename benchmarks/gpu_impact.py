"""What OPT101 and OPT102 buy on a GPU, measured the way the rules' impact classes state it.

Usage (on a CUDA machine): python benchmarks/gpu_impact.py [--json PATH]

Per call, median of many after warm-up:
- torch.zeros vs torch.empty on cuda (host time per call, and GPU time with CUDA events);
- pinned torch.zeros vs torch.empty on the host, steady state (caching host allocator);
- factory on the CPU then .cuda() vs created with device= (arange(1e6), zeros(1e6));
- torch.tensor(list_of_1024).cuda() vs device='cuda' vs pin_memory + non_blocking,
  with ~5 ms of GPU work queued, to show which forms block on it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def host_us(function, repeat: int = 200, warmup: int = 20) -> float:
    """Median host time per call; synchronises before each call so queues start empty."""
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(samples) * 1e6


def gpu_us(function, repeat: int = 100, warmup: int = 10) -> float:
    for _ in range(warmup):
        function()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeat):
        begin.record()
        function()
        end.record()
        end.synchronize()
        samples.append(begin.elapsed_time(end) * 1e3)
    return statistics.median(samples)


def queued_return_us(function, queue_ms: float = 5.0, repeat: int = 20) -> float:
    """Median time for `function` to return while ~queue_ms of GPU work is queued ahead of it."""
    cycles = int(queue_ms * 1e-3 * torch.cuda.get_device_properties(0).clock_rate * 1e3)
    samples = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        torch.cuda._sleep(cycles)
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
        torch.cuda.synchronize()
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []

    def add(group, case, before, after, unit="us"):
        rows.append({"group": group, "case": case, "original": before, "rewritten": after,
                     "speedup": before / after if after else float("nan"), "unit": unit})

    for size in (1 << 20, 64 << 20, 1 << 30):
        n = size // 4
        add("OPT101 cuda", f"zeros->empty {size >> 20} MiB host", host_us(lambda: torch.zeros(n, device="cuda")),
            host_us(lambda: torch.empty(n, device="cuda")))
        add("OPT101 cuda", f"zeros->empty {size >> 20} MiB gpu", gpu_us(lambda: torch.zeros(n, device="cuda")),
            gpu_us(lambda: torch.empty(n, device="cuda")))
    for size in (64 << 10, 64 << 20):
        n = size // 4
        add("OPT101 pinned", f"zeros->empty {size >> 10} KiB", host_us(lambda: torch.zeros(n, pin_memory=True), repeat=50),
            host_us(lambda: torch.empty(n, pin_memory=True), repeat=50))
    n = 1_000_000
    add("OPT102", "arange(1e6).cuda() -> device=", host_us(lambda: torch.arange(n).cuda()),
        host_us(lambda: torch.arange(n, device="cuda")))
    add("OPT102", "zeros(1e6).cuda() -> device=", host_us(lambda: torch.zeros(n).cuda()),
        host_us(lambda: torch.zeros(n, device="cuda")))
    add("OPT102 queued 5 ms", "arange(1e6).cuda() -> device=", queued_return_us(lambda: torch.arange(n).cuda()),
        queued_return_us(lambda: torch.arange(n, device="cuda")))
    values = list(range(1024))
    add("OPT102 queued 5 ms", "tensor(list).cuda() -> device=", queued_return_us(lambda: torch.tensor(values).cuda()),
        queued_return_us(lambda: torch.tensor(values, device="cuda")))
    add("OPT102 queued 5 ms", "tensor(list).cuda() -> pin+non_blocking",
        queued_return_us(lambda: torch.tensor(values).cuda()),
        queued_return_us(lambda: torch.tensor(values, pin_memory=True).to("cuda", non_blocking=True)))

    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"{'group':<20} {'case':<42} {'original':>12} {'rewritten':>12} {'speedup':>9}")
    for row in rows:
        print(f"{row['group']:<20} {row['case']:<42} {row['original']:>10.1f}us {row['rewritten']:>10.1f}us {row['speedup']:>8.1f}x")
    if args.json:
        with open(args.json, "w") as stream:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}, stream, indent=2)


if __name__ == "__main__":
    main()
