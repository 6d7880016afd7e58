"""benchmarks/gpu_opt103.py, the parts that need no GPU: arguments, fixtures, comparisons, the report.

The GPU run itself is the lead's (docs/benchmarks.md has its command). Here the
script's fixture pipeline is also run end to end on the CPU, under
cuda_on_cpu.CudaOnCpu with `torch.cuda._sleep` a no-op: its copies are then
immediate, so the rewrites must agree with the originals, which checks the
plumbing, not the races.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cuda_on_cpu import CudaOnCpu, device_of

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_opt103.py"
_spec = importlib.util.spec_from_file_location("gpu_opt103", SCRIPT)
gpu = importlib.util.module_from_spec(_spec)
sys.modules["gpu_opt103"] = gpu
_spec.loader.exec_module(gpu)


def test_arguments():
    args = gpu.parse_args(["--json", "x.json", "--queue-ms", "2.5", "--skip-timings"])
    assert (args.json, args.queue_ms, args.skip_timings) == (Path("x.json"), 2.5, True)
    assert gpu.parse_args([]).queue_ms == 5.0
    with pytest.raises(SystemExit):
        gpu.parse_args(["--queue-ms", "0"])


def test_every_fixture_is_paired_with_each_of_its_rewrites():
    found = {(c.fixture, c.rewrite): c for c in gpu.comparisons()}
    goldens = sorted(gpu.FIXTURES.glob("*.*.py"))
    assert len(found) == len(goldens) >= 6
    assert ("races", "forced") in found and not found[("races", "forced")].must_agree
    assert all(c.must_agree for key, c in found.items() if key[1] != "forced")
    chained = found[("chained_forms", "fixed")]
    assert chained.original == (gpu.FIXTURES / "chained_forms.py").read_text()
    assert chained.rewritten == (gpu.FIXTURES / "chained_forms.fixed.py").read_text()


def test_judging_results():
    nan = torch.tensor([float("nan"), 1.0])
    assert gpu.same(nan, nan.clone()) and not gpu.same(nan, torch.tensor([0.0, 1.0]))
    assert not gpu.same(torch.tensor([1]), torch.tensor([1.0]))
    assert gpu.same((torch.tensor([1]), {"a": 2}), (torch.tensor([1]), {"a": 2}))
    fixed = gpu.Comparison("f", "fixed", "", "")
    forced = gpu.Comparison("f", "forced", "", "")
    before = {"case_a": torch.tensor([1]), "case_b": gpu.Raised("E", "m")}
    agreeing = {"case_a": torch.tensor([1]), "case_b": gpu.Raised("E", "m")}
    racing = {"case_a": torch.tensor([2]), "case_b": torch.tensor([3])}
    assert gpu.judge(fixed, before, agreeing).ok and not gpu.judge(fixed, before, racing).ok
    assert gpu.judge(forced, before, racing).ok and not gpu.judge(forced, before, agreeing).ok
    assert gpu.judge(fixed, before, racing).differing == ["case_a", "case_b"]
    with pytest.raises(ValueError):
        gpu.judge(fixed, before, {"case_a": torch.tensor([1])})


def test_copy_requests_are_read_as_tensor_to_reads_them():
    source = torch.arange(3)
    request = gpu.copy_request(False, (source, "cuda:0", torch.float16), {"non_blocking": True})
    assert request[1:] == (torch.device("cuda", 0), torch.float16, True)
    assert gpu.copy_request(True, (source,), {})[1:] == (torch.device("cuda"), None, False)
    assert gpu.copy_request(True, (source, 0, True), {})[1:] == (torch.device("cuda", 0), None, True)
    assert gpu.copy_request(False, (source,), {"device": torch.device("cuda")})[1] == torch.device("cuda")
    for args, kwargs in (((source, torch.float16), {}), ((source, "cpu"), {}), ((source, source), {}),
                         ((source,), {"memory_format": torch.contiguous_format}), ((source, True), {})):
        assert gpu.copy_request(False, args, kwargs) is None


def test_the_report_names_the_card_versions_and_date():
    machine = gpu.Machine("NVIDIA H100 80GB HBM3", "2.11.0+cu130", "13.0", "2026-11-26", 5.0)
    outcomes = [gpu.Outcome("races", "forced", 6, 0, "different in every case", True),
                gpu.Outcome("keeps", "fixed", 14, 13, "identical", False, ["case_x"])]
    timings = [gpu.Timing("list of 1,024 ints", 158.0, 236.0, 4812.0, 317.0)]
    text = gpu.render(machine, outcomes, timings)
    assert "NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, CUDA 13.0, 2026-11-26" in text
    assert "| races | forced | 6 | 0 | different in every case | ok |" in text
    assert "FAILED (case_x)" in text
    assert "| list of 1,024 ints | 158 us | 236 us | 4.81 ms | 317 us |" in text
    document = json.loads(gpu.report_json(machine, outcomes, timings))
    assert document["machine"]["card"] == machine.card and document["timings"][0]["queued_after_us"] == 317.0


def test_without_cuda_it_says_so_and_runs_nothing():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "no CUDA device" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_the_fixture_pipeline_runs_end_to_end_on_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None, raising=False)
    for comparison in gpu.comparisons():
        with CudaOnCpu():
            before = gpu.run_cases(comparison.original, f"{comparison.fixture}_original", 1)
        with CudaOnCpu():
            after = gpu.run_cases(comparison.rewritten, f"{comparison.fixture}_{comparison.rewrite}", 1)
        assert before and not any(isinstance(v, gpu.Raised) for v in before.values()), comparison.fixture
        if comparison.must_agree:
            assert gpu.judge(comparison, before, after).ok, (comparison.fixture, comparison.rewrite)


def test_the_copies_it_queues_land_on_the_device_asked_for(monkeypatch):
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None, raising=False)
    with CudaOnCpu(), gpu.queued_copies_mode(1):
        moved = torch.tensor([1, 2]).to("cuda:0", torch.float64, non_blocking=True)
        created = torch.tensor([3.0], device="cuda")
        kept = torch.tensor([4]).to(torch.int8)
    assert device_of(moved) == device_of(created) == torch.device("cuda", 0) and moved.dtype == torch.float64
    assert moved.tolist() == [1.0, 2.0] and created.tolist() == [3.0] and kept.dtype == torch.int8
