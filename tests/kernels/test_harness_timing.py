"""The harness's timing path, run on the CPU with CUDA's clocks and sleeps
replaced, so that its bookkeeping is tested where CI runs."""

import pytest
import torch

from kernels import cases, harness, reference


class FakeEvent:
    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.25  # milliseconds


@pytest.fixture
def cpu_as_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None)
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(harness, "HOST_REPEATS", 4)
    monkeypatch.setattr(harness, "GPU_REPEATS", 4)
    monkeypatch.setattr(harness, "QUEUED_REPEATS", 4)
    monkeypatch.setattr(harness, "TIMING_ROUNDS", 2)
    monkeypatch.setattr(harness, "WARMUP_CALLS", 1)


def test_every_variant_gets_every_measure(cpu_as_cuda):
    workloads = cases.cpu_reference_sweep()
    timings = harness.time_all({"original": reference, "patched": reference}, workloads, torch.device("cpu"))
    measures_per_workload = {"copy_blocks": 3}
    expected = sum(2 * measures_per_workload.get(w.kernel, 2) for w in workloads)
    assert len(timings) == expected
    assert {t.variant for t in timings} == {"original", "patched"}
    queued = [t for t in timings if t.measure.startswith("us to return")]
    assert queued and {t.kernel for t in queued} == {"copy_blocks"}
    assert all(t.microseconds == pytest.approx(250.0) for t in timings if t.measure == "gpu us/call")
    assert all(t.q1 <= t.microseconds <= t.q3 for t in timings)


def test_rounds_alternate_the_order_of_the_variants():
    order = []

    def sampler(call, repeats):
        order.append(call())
        return [1.0] * repeats

    spreads = harness.interleaved_quartiles({"a": lambda: "a", "b": lambda: "b"}, sampler, repeats=40)
    assert order == ["a", "b", "b", "a"] * (harness.TIMING_ROUNDS // 2)
    assert spreads == {"a": harness.Quartiles(1.0, 1.0, 1.0), "b": harness.Quartiles(1.0, 1.0, 1.0)}


def test_each_timing_carries_its_quartiles_beside_its_median():
    assert harness.Quartiles.of([1.0, 2.0, 3.0, 4.0, 100.0]) == harness.Quartiles(2.0, 3.0, 4.0)
    assert harness.Quartiles.of([7.0]) == harness.Quartiles(7.0, 7.0, 7.0)


def test_sleep_is_calibrated_from_the_measured_rate(cpu_as_cuda):
    # 10M probe cycles measured at 0.25 ms: 5 ms needs 200M cycles.
    assert harness.sleep_cycles_for(5.0) == 200_000_000
