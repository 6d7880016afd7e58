"""OPT103 on a GPU: its fixtures executed before and after the rewrite, and what the copy forms cost the host.

Usage, on a machine with a CUDA GPU (one command, no network, about a minute):

    python3 benchmarks/gpu_opt103.py [--json PATH] [--queue-ms 5] [--skip-timings]

Writes the same JSON to $OUT/gpu_opt103.json when $OUT is set. Needs torch
and numpy only (not optpatch: the rewritten fixtures are the goldens in
tests/fixtures/python/opt103). Exit status: 0 when every check came out as
expected, 1 when one did not, 2 without a CUDA device (nothing is run).

1. Fixtures. Each `name.py` is run against each of its rewrites
   (`name.fixed.py`: the safe fixes; `name.validate.py`: the validate fixes
   too; `races.forced.py`: the kept races rewritten anyway). Every
   host-to-device copy they make goes through `QueuedCopies`: the GPU is
   synchronised, the destination is filled with a sentinel (NaN, or the
   largest integer), about `--queue-ms` of work is queued on the current
   stream with `torch.cuda._sleep`, and then the copy is made as the code
   asked (`non_blocking` or not). A reader that overtakes the copy reads the
   sentinel; a copy that reads its source late reads what the host wrote in
   the meantime. Each `case_*` result is brought to the host after a full
   synchronisation and compared exactly with the original's: the fixed and
   validate rewrites must give identical results in every case, the forced
   races a different result in every case.
2. Timings. Host time per call, median, of `torch.tensor(list).cuda()` ->
   `torch.tensor(list, pin_memory=True).cuda(non_blocking=True)` (16, 1,024
   and 65,536 elements) and `torch.from_numpy(a).cuda()` ->
   `torch.from_numpy(a).pin_memory().cuda(non_blocking=True)` (1 MiB and
   64 MiB of float32), with the GPU idle and with `--queue-ms` of work queued.

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
import time
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "python" / "opt103"
REWRITES = {".fixed.py": "fixed", ".validate.py": "validate", ".forced.py": "forced"}
LIST_SIZES = (16, 1024, 65536)
ARRAY_BYTES = (1 << 20, 64 << 20)


# -- the fixtures -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """A fixture and one of its rewrites, and whether their cases must agree."""

    fixture: str
    rewrite: str  # "fixed", "validate", "forced"
    original: str
    rewritten: str

    @property
    def must_agree(self) -> bool:
        return self.rewrite != "forced"


def comparisons(directory: Path = FIXTURES) -> list[Comparison]:
    """Every fixture with each of its rewrites, sorted; a fixture without a rewrite is left out."""
    found = []
    for path in sorted(directory.glob("*.py")):
        if any(path.name.endswith(suffix) for suffix in REWRITES):
            continue
        for suffix, rewrite in REWRITES.items():
            rewritten = path.with_name(path.stem + suffix)
            if rewritten.exists():
                found.append(Comparison(path.stem, rewrite, path.read_text(encoding="utf-8"),
                                        rewritten.read_text(encoding="utf-8")))
    return found


@dataclass
class Outcome:
    fixture: str
    rewrite: str
    cases: int
    agreeing: int
    expected: str  # "identical" or "different in every case"
    ok: bool
    differing: list[str] = field(default_factory=list)


def judge(comparison: Comparison, before: dict, after: dict) -> Outcome:
    """Compare the cases' results (already on the host) against what the rewrite promises."""
    if before.keys() != after.keys():
        raise ValueError(f"{comparison.fixture}: the rewrite has other cases than the original")
    differing = sorted(name for name in before if not same(before[name], after[name]))
    agreeing = len(before) - len(differing)
    if comparison.must_agree:
        ok = not differing
    else:
        ok = agreeing == 0
    expected = "identical" if comparison.must_agree else "different in every case"
    return Outcome(comparison.fixture, comparison.rewrite, len(before), agreeing, expected, ok and bool(before), differing)


def same(a, b) -> bool:
    """Exactly equal results: tensors by dtype, device, shape and every element (NaN equals NaN), recursively."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if (a.dtype, a.device, a.shape) != (b.dtype, b.device, b.shape):
            return False
        equal = a == b
        if a.is_floating_point() or a.is_complex():
            equal |= torch.isnan(a) & torch.isnan(b)
        return bool(equal.all())
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@dataclass(frozen=True)
class Raised:
    """A case that raised: compared by exception type and message, like a value."""

    error: str
    message: str


# -- every host-to-device copy, with work queued before it ------------------------------------------------


def queued_copies_mode(queue_cycles: int):
    """A TorchFunctionMode that makes every copy of a CPU tensor to a CUDA device wait behind queued work."""
    import torch
    from torch.overrides import TorchFunctionMode

    class QueuedCopies(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.to or func is torch.Tensor.cuda:
                request = copy_request(func is torch.Tensor.cuda, args, kwargs)
                if request is not None:
                    return self._copy(*request)
            elif func is torch.tensor and _is_cuda(kwargs.get("device")):
                # What `torch.tensor(data, device=d)` does: convert on the host, then a blocking copy; a leaf.
                device = _cuda_device(kwargs.pop("device"))
                requires_grad = kwargs.pop("requires_grad", False)
                return self._copy(func(*args, **kwargs), device, None, False).requires_grad_(requires_grad)
            return func(*args, **kwargs)

        @staticmethod
        def _copy(source, device, dtype, non_blocking):
            # All streams idle, so the sentinel is in place before any reader can run; then the queued work.
            torch.cuda.synchronize()
            destination = torch.empty_like(source, dtype=dtype or source.dtype, device=device)
            _fill_sentinel(destination)
            torch.cuda.synchronize()
            torch.cuda._sleep(queue_cycles)
            destination.copy_(source, non_blocking=non_blocking)
            return destination

    return QueuedCopies()


def copy_request(is_cuda: bool, args, kwargs):
    """(source, device, dtype, non_blocking) when `Tensor.cuda` / `Tensor.to` copies a CPU tensor to CUDA, else None."""
    source, rest = args[0], list(args[1:])
    if source.device.type != "cpu" or "memory_format" in kwargs:
        return None
    if is_cuda:
        device = rest[0] if rest else kwargs.get("device")
        non_blocking = rest[1] if len(rest) > 1 else kwargs.get("non_blocking", False)
        return source, _cuda_device("cuda" if device is None else device), None, bool(non_blocking)
    device = rest[0] if rest else kwargs.get("device")
    if not _is_cuda(device):
        return None
    dtype = rest[1] if len(rest) > 1 else kwargs.get("dtype")
    non_blocking = rest[2] if len(rest) > 2 else kwargs.get("non_blocking", False)
    return source, _cuda_device(device), dtype, bool(non_blocking)


def _cuda_device(device):
    import torch

    return torch.device("cuda", device) if isinstance(device, int) else torch.device(device)


def _is_cuda(device) -> bool:
    import torch

    if isinstance(device, bool) or device is None:
        return False
    if isinstance(device, int):
        return True
    try:
        return torch.device(device).type == "cuda"
    except (RuntimeError, TypeError):
        return False


def _fill_sentinel(tensor) -> None:
    import torch

    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)


def run_cases(code: str, name: str, queue_cycles: int) -> dict:
    """Load the module and run its `case_*` functions under `QueuedCopies`; results brought to the host."""
    import torch

    results = {}
    with queued_copies_mode(queue_cycles):
        module = types.ModuleType(name)
        exec(compile(code, f"<{name}>", "exec"), module.__dict__)
        for case in sorted(vars(module)):
            if not case.startswith("case_"):
                continue
            try:
                value = getattr(module, case)()
                torch.cuda.synchronize()
                results[case] = _to_host(value)
            except Exception as error:  # a rewrite that makes a case raise is a difference, not a crash
                torch.cuda.synchronize()
                results[case] = Raised(type(error).__name__, str(error))
    return results


def _to_host(value):
    import torch

    if isinstance(value, torch.Tensor):
        return _DeviceTagged(value.detach().cpu(), str(value.device))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_host(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class _DeviceTagged:
    """A result tensor, on the host, with the device it was on."""

    tensor: object
    device: str

    def __eq__(self, other) -> bool:
        return isinstance(other, _DeviceTagged) and self.device == other.device and same(self.tensor, other.tensor)


# -- host time per call -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    case: str
    idle_before_us: float
    idle_after_us: float
    queued_before_us: float
    queued_after_us: float


def copy_forms():
    """(case, before, after) for the sizes of the rule's measured impact."""
    import numpy as np
    import torch

    forms = []
    for n in LIST_SIZES:
        values = list(range(n))
        forms.append((f"list of {n:,} ints", lambda v=values: torch.tensor(v).cuda(),
                      lambda v=values: torch.tensor(v, pin_memory=True).cuda(non_blocking=True)))
    for size in ARRAY_BYTES:
        array = np.arange(size // 4, dtype=np.float32)
        forms.append((f"{size >> 20} MiB float32 array", lambda a=array: torch.from_numpy(a).cuda(),
                      lambda a=array: torch.from_numpy(a).pin_memory().cuda(non_blocking=True)))
    return forms


def idle_us(function, repeat: int, warmup: int = 5) -> float:
    import torch

    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(samples) * 1e6


def queued_us(function, queue_cycles: int, repeat: int, warmup: int = 3) -> float:
    import torch

    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        torch.cuda._sleep(queue_cycles)
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
        torch.cuda.synchronize()
    return statistics.median(samples) * 1e6


def measure(queue_cycles: int) -> list[Timing]:
    rows = []
    for case, before, after in copy_forms():
        repeat = 30 if "65,536" in case or "64 MiB" in case else 200
        rows.append(Timing(case, idle_us(before, repeat), idle_us(after, repeat),
                           queued_us(before, queue_cycles, 20), queued_us(after, queue_cycles, 20)))
    return rows


# -- the report -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    card: str
    torch: str
    cuda: str
    date: str
    queue_ms: float


def render(machine: Machine, outcomes: list[Outcome], timings: list[Timing]) -> str:
    lines = [
        f"OPT103 on {machine.card}, torch {machine.torch}, CUDA {machine.cuda}, {machine.date}; "
        f"{machine.queue_ms:g} ms of GPU work queued before each fixture copy.",
        "",
        "| fixture | rewrite | cases | identical to the original | expected | result |",
        "|---|---|---:|---:|---|---|",
    ]
    for outcome in outcomes:
        verdict = "ok" if outcome.ok else "FAILED" + (f" ({', '.join(outcome.differing)})" if outcome.differing else "")
        lines.append(f"| {outcome.fixture} | {outcome.rewrite} | {outcome.cases} | {outcome.agreeing} | "
                     f"{outcome.expected} | {verdict} |")
    if timings:
        lines += [
            "",
            f"Host time per call, median (queued: {machine.queue_ms:g} ms of GPU work queued before the call).",
            "",
            "| copy | idle, pageable | idle, pinned + non_blocking | queued, pageable | queued, pinned + non_blocking |",
            "|---|---:|---:|---:|---:|",
        ]
        for row in timings:
            lines.append(f"| {row.case} | {_us(row.idle_before_us)} | {_us(row.idle_after_us)} | "
                         f"{_us(row.queued_before_us)} | {_us(row.queued_after_us)} |")
    return "\n".join(lines) + "\n"


def _us(value: float) -> str:
    return f"{value / 1000:,.2f} ms" if value >= 1000 else f"{value:,.0f} us"


def report_json(machine: Machine, outcomes: list[Outcome], timings: list[Timing]) -> str:
    return json.dumps({"machine": asdict(machine), "fixtures": [asdict(o) for o in outcomes],
                       "timings": [asdict(t) for t in timings]}, indent=2)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--queue-ms", type=float, default=5.0, help="GPU work queued before each copy (default 5)")
    parser.add_argument("--skip-timings", action="store_true", help="run the fixture checks only")
    args = parser.parse_args(argv)
    if args.queue_ms <= 0:
        parser.error("--queue-ms must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_opt103: torch is not installed: nothing to run (this script needs a CUDA GPU)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_opt103: no CUDA device: nothing to run (this script needs a CUDA GPU; the CPU checks of the same "
              "fixtures are tests/python/test_opt103_fixtures.py)", file=sys.stderr)
        return 2
    properties = torch.cuda.get_device_properties(0)
    queue_cycles = int(args.queue_ms * 1e-3 * properties.clock_rate * 1e3)  # clock_rate is in kHz
    machine = Machine(torch.cuda.get_device_name(0), torch.__version__, str(torch.version.cuda),
                      datetime.date.today().isoformat(), args.queue_ms)
    outcomes = []
    for comparison in comparisons():
        before = run_cases(comparison.original, f"{comparison.fixture}_original", queue_cycles)
        after = run_cases(comparison.rewritten, f"{comparison.fixture}_{comparison.rewrite}", queue_cycles)
        outcomes.append(judge(comparison, before, after))
    timings = [] if args.skip_timings else measure(queue_cycles)
    print(render(machine, outcomes, timings), end="")
    document = report_json(machine, outcomes, timings)
    targets = [args.json] if args.json else []
    if os.environ.get("OUT"):
        targets.append(Path(os.environ["OUT"]) / "gpu_opt103.json")
    for target in targets:
        target.write_text(document + "\n", encoding="utf-8")
    return 0 if outcomes and all(outcome.ok for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
