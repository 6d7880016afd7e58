"""Build, check and time the kernels; `optpatch validate` drives it in the
original and the rewritten tree.

    python -m kernels.harness build --name NAME --build-dir DIR
    python -m kernels.harness check --name NAME --build-dir DIR --out FILE.json [--kernel KERNEL ...]
    python -m kernels.harness time --variant LABEL NAME DIR KERNELS_DIR [--variant ...] --out FILE.json
    python -m kernels.harness check-reference --out FILE.json

`check` needs a GPU: it checks this tree's build bit for bit against
kernels.reference over the sweep of kernels.cases (fp16, bf16, fp32, with
NaN-poisoned outputs and poisoned fresh allocations). `time` loads several
builds into one process and times them in alternating rounds on the same
inputs (fp16), so that the GPU's clock ramp favours none of them.
`check-reference` needs no GPU: it checks kernels.reference against the
loops of kernels.loops on the CPU. All write JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import torch

from . import cases, loops, reference

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCES = ("cache_kernels.cu", "bindings.cpp")
SEED = 20261126
TIMING_DTYPE = torch.float16
HOST_REPEATS = 200
GPU_REPEATS = 200
QUEUED_REPEATS = 20
TIMING_ROUNDS = 10
WARMUP_CALLS = 20
QUEUED_GPU_MILLISECONDS = 5.0


@dataclasses.dataclass(frozen=True)
class Check:
    kernel: str
    shape: str
    dtype: str
    ok: bool
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Timing:
    variant: str
    kernel: str
    shape: str
    measure: str
    microseconds: float  # the median
    q1: float  # the first and third quartiles: the spread of the samples, `optpatch validate`'s noise
    q3: float


@dataclasses.dataclass(frozen=True)
class Quartiles:
    q1: float
    median: float
    q3: float

    @classmethod
    def of(cls, samples: list[float]) -> "Quartiles":
        if len(samples) < 2:
            return cls(samples[0], samples[0], samples[0])
        q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        return cls(q1, median, q3)


@contextlib.contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Fresh allocations (torch.empty, also in C++) come back NaN-filled
    (integers: their largest value), so reading unwritten memory shows."""
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    was_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    was_filling = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = was_filling
        torch.use_deterministic_algorithms(was_deterministic, warn_only=was_warn_only)


_SAME_WIDTH_INTEGER = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bitwise_equal(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal bit patterns: NaN matches only the same NaN, -0.0 differs from 0.0."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    as_integers = _SAME_WIDTH_INTEGER[actual.element_size()]
    expected = expected.to(actual.device)
    return torch.equal(actual.contiguous().view(as_integers), expected.contiguous().view(as_integers))


def clone_args(args):
    """Deep copy of tensors, lists and tuples of tensors; anything else is shared."""
    if isinstance(args, torch.Tensor):
        return args.clone()
    if isinstance(args, (list, tuple)):
        return type(args)(clone_args(item) for item in args)
    return args


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def check_workload(
    kernel: Callable,
    oracle: Callable,
    workload: cases.Workload,
    dtype: torch.dtype,
    device: torch.device,
) -> Check:
    """Run kernel and oracle on identical fresh, poisoned inputs and compare
    everything the kernel writes."""
    label = dict(kernel=workload.kernel, shape=workload.shape, dtype=str(dtype).removeprefix("torch."))
    try:
        with poisoned_allocations():
            args = workload.make_args(dtype, device, cases.RandomSource(SEED))
            if any(tensor.isnan().any() for tensor in workload.read(args)):
                return Check(**label, ok=False, detail="the inputs hold NaN: an allocation was read before it was written")
            expected = clone_args(args)
            expected_result = oracle(*expected)
            result = kernel(*args)
            synchronize(device)
    except Exception as error:  # a failed TORCH_CHECK or CUDA error is a failed check
        return Check(**label, ok=False, detail=f"{type(error).__name__}: {error}")
    if (result is None) != (expected_result is None):
        return Check(**label, ok=False, detail="the kernel and the oracle disagree on returning a tensor")
    written = list(zip(workload.written(args), workload.written(expected)))
    if result is not None:
        written.append((result, expected_result))  # a returned output: the last index
    wrong = [index for index, (got, want) in enumerate(written) if not bitwise_equal(got, want)]
    if wrong:
        return Check(**label, ok=False, detail=f"output tensors {wrong} differ from the oracle")
    return Check(**label, ok=True)


def check_all(implementation, oracle_module, workloads, device: torch.device) -> list[Check]:
    return [
        check_workload(getattr(implementation, w.kernel), getattr(oracle_module, w.kernel), w, dtype, device)
        for w in workloads
        for dtype in cases.DTYPES
    ]


def host_samples(call: Callable[[], None], repeats: int) -> list[float]:
    """Microseconds for a call to return to the host, each from an idle GPU."""
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


def gpu_samples(call: Callable[[], None], repeats: int) -> list[float]:
    """Microseconds of stream time from before to after one call (CUDA events)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return samples


def sleep_cycles_for(milliseconds: float) -> int:
    """GPU clock cycles that torch.cuda._sleep needs to keep the stream busy
    for about `milliseconds`."""
    probe_cycles = 10_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(probe_cycles)  # first launch pays for loading the kernel
    torch.cuda.synchronize()
    start.record()
    torch.cuda._sleep(probe_cycles)
    end.record()
    end.synchronize()
    return int(probe_cycles * milliseconds / start.elapsed_time(end))


def queued_return_samples(call: Callable[[], None], repeats: int, sleep_cycles: int) -> list[float]:
    """Microseconds for a call to return while the stream still has work
    queued: a call that waits for the device shows the queue's length."""
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        torch.cuda._sleep(sleep_cycles)
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1e6)
    torch.cuda.synchronize()
    return samples


def interleaved_quartiles(
    calls: dict[str, Callable[[], None]], sampler: Callable[[Callable[[], None], int], list[float]], repeats: int
) -> dict[str, Quartiles]:
    """Median and quartiles per variant, sampled in TIMING_ROUNDS alternating
    rounds (A B, B A, ...) so that clock ramps and drift hit every variant alike."""
    samples: dict[str, list[float]] = {label: [] for label in calls}
    labels = list(calls)
    for round_index in range(TIMING_ROUNDS):
        for label in labels if round_index % 2 == 0 else reversed(labels):
            samples[label] += sampler(calls[label], max(1, repeats // TIMING_ROUNDS))
    return {label: Quartiles.of(values) for label, values in samples.items()}


def time_workload(variants: dict, workload: cases.Workload, device: torch.device, sleep_cycles: int) -> list[Timing]:
    """Time every variant's kernel on the same arguments (the kernels are
    idempotent on them: every call writes the same values)."""
    args = workload.make_args(TIMING_DTYPE, device, cases.RandomSource(SEED))
    calls = {label: functools.partial(getattr(module, workload.kernel), *args) for label, module in variants.items()}
    for call in calls.values():
        for _ in range(WARMUP_CALLS):
            call()
    measures = [("host us/call", host_samples, HOST_REPEATS), ("gpu us/call", gpu_samples, GPU_REPEATS)]
    if workload.kernel == "copy_blocks":
        queued = functools.partial(queued_return_samples, sleep_cycles=sleep_cycles)
        measures.append((f"us to return, {QUEUED_GPU_MILLISECONDS:g} ms queued", queued, QUEUED_REPEATS))
    timings = []
    for measure, sampler, repeats in measures:
        for label, spread in interleaved_quartiles(calls, sampler, repeats).items():
            timings.append(Timing(label, workload.kernel, workload.shape, measure, spread.median, spread.q1, spread.q3))
    return timings


def time_all(variants: dict, workloads, device: torch.device) -> list[Timing]:
    sleep_cycles = sleep_cycles_for(QUEUED_GPU_MILLISECONDS)
    timings = []
    for workload in workloads:
        timings += time_workload(variants, workload, device, sleep_cycles)
        torch.cuda.empty_cache()
    return timings


def load_extension(name: str, build_dir: Path, source_dir: Path = PACKAGE_DIR, verbose: bool = False):
    """Build (or reuse) a tree's extension under its own name and folder,
    so that two trees' builds can be loaded side by side."""
    from torch.utils import cpp_extension

    # Resolved paths keep the generated ninja file identical between the
    # build and later loads, so that a load never recompiles.
    build_dir, source_dir = build_dir.resolve(), source_dir.resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    return cpp_extension.load(
        name=name,
        sources=[str(source_dir / "csrc" / source) for source in SOURCES],
        build_directory=str(build_dir),
        extra_cflags=["-O3"],
        extra_cuda_cflags=["-O3"],
        verbose=verbose,
    )


def environment() -> dict:
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return {
        "device": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tree": str(PACKAGE_DIR),
    }


def write_results(path: Path, checks: list[Check], timings: list[Timing]) -> None:
    results = {
        "environment": environment(),
        "checks": [dataclasses.asdict(check) for check in checks],
        "timings": [dataclasses.asdict(timing) for timing in timings],
    }
    path.write_text(json.dumps(results, indent=2) + "\n")


def summarize(checks: list[Check]) -> int:
    failed = [check for check in checks if not check.ok]
    for check in failed:
        print(f"FAILED {check.kernel} {check.shape} {check.dtype}: {check.detail}", file=sys.stderr)
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kernels.harness", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for command in ("build", "check"):
        sub = commands.add_parser(command, help=f"{command} this tree's extension")
        sub.add_argument("--name", required=True, help="the extension's module name")
        sub.add_argument("--build-dir", required=True, type=Path)
        sub.add_argument("--verbose", action="store_true")
        if command == "check":
            sub.add_argument("--out", required=True, type=Path)
            sub.add_argument("--kernel", action="append", default=[],
                             help="check only this kernel (repeatable); all by default")
    timing = commands.add_parser("time", help="time built extensions against each other")
    timing.add_argument("--variant", nargs=4, action="append", required=True,
                        metavar=("LABEL", "NAME", "BUILD_DIR", "KERNELS_DIR"),
                        help="an extension built from KERNELS_DIR/csrc; repeat for each variant")
    timing.add_argument("--out", required=True, type=Path)
    reference_parser = commands.add_parser("check-reference", help="reference vs loops on the CPU")
    reference_parser.add_argument("--out", required=True, type=Path)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    if args.command == "check-reference":
        checks = check_all(reference, loops, cases.cpu_reference_sweep(), torch.device("cpu"))
        write_results(args.out, checks, [])
        return summarize(checks)
    if args.command == "time":
        variants = {
            label: load_extension(name, Path(build_dir), Path(kernels_dir))
            for label, name, build_dir, kernels_dir in args.variant
        }
        timings = time_all(variants, cases.gpu_sweep(), torch.device("cuda"))
        write_results(args.out, [], timings)
        return 0
    extension = load_extension(args.name, args.build_dir, verbose=args.verbose)
    if args.command == "build":
        return 0
    workloads = [w for w in cases.gpu_sweep() if not args.kernel or w.kernel in args.kernel]
    checks = check_all(extension, reference, workloads, torch.device("cuda"))
    write_results(args.out, checks, [])
    return summarize(checks)


if __name__ == "__main__":
    sys.exit(main())
