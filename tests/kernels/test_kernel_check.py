"""`optpatch validate` without a GPU, with stand-in rewriters: what it
runs, what it skips, and when it exits 4."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from optpatch.validation import kernels as kv

KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"


def edit(tree: Path, relative: str, old: str, new: str) -> None:
    path = tree / "kernels" / relative
    text = path.read_text()
    assert old in text, f"{relative} no longer contains {old!r}"
    path.write_text(text.replace(old, new, 1))


def vla_to_vector(tree: Path) -> None:
    """Stands in for OPT201 on one array: enough to change host code."""
    edit(tree, "csrc/cache_kernels.cu", "  int64_t key_cache_ptrs[num_layers];",
         "  std::vector<int64_t> key_cache_ptrs(num_layers);")
    edit(tree, "csrc/cache_kernels.cu", "torch::from_blob(key_cache_ptrs,", "torch::from_blob(key_cache_ptrs.data(),")


def zeros_to_empty(tree: Path) -> None:
    edit(tree, "cases.py", "tensor = torch.zeros(shape,", "tensor = torch.empty(shape,")


def both_rewrites(tree: Path) -> None:
    vla_to_vector(tree)
    zeros_to_empty(tree)


def run(capsys, rewriter, **options):
    code = kv.run_kernel_check("json", rewriter=rewriter, kernels_dir=KERNELS_DIR, gpu=False, nvcc=False, **options)
    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == code
    return code, report


def test_without_a_gpu_it_checks_what_it_can_and_states_the_skips(capsys):
    code, report = run(capsys, both_rewrites)
    assert code == 0, report["failures"]
    assert report["changed_files"] == ["kernels/cases.py", "kernels/csrc/cache_kernels.cu"]
    assert any("no CUDA device" in line for line in report["skipped"])
    assert any("nvcc" in line for line in report["skipped"])
    reference_runs = [line for line in report["passed"] if line.startswith("reference vs loops")]
    assert len(reference_runs) == 2 and all("39/39" in line for line in reference_runs)
    assert report["rows"] == []


def test_a_rewrite_that_leaves_host_code_alone_fails(capsys):
    code, report = run(capsys, zeros_to_empty)
    assert code == kv.EXIT_CHECK_FAILED
    assert "changed no C++/CUDA host code" in report["failures"][0]


def test_a_failed_rewrite_fails(capsys):
    def refuses(tree):
        raise kv.RewriteFailed("optpatch exited 2")

    code, report = run(capsys, refuses)
    assert code == kv.EXIT_CHECK_FAILED
    assert "optpatch exited 2" in report["failures"][0]


def test_a_rewrite_that_reads_poisoned_memory_fails(capsys):
    def wrong_zeros_to_empty(tree):
        vla_to_vector(tree)
        edit(tree, "cases.py", "tensor = torch.zeros(shape,", "tensor = torch.empty(shape,")
        edit(tree, "cases.py", "    tensor.uniform_(", "    tensor[:1].uniform_(")

    code, report = run(capsys, wrong_zeros_to_empty)
    assert code == kv.EXIT_CHECK_FAILED
    assert report["failures"] and all(line.startswith("patched: reference") for line in report["failures"])
    assert any("NaN" in line for line in report["failures"])


def test_the_workdir_keeps_both_trees_and_logs(tmp_path, capsys):
    code, _ = run(capsys, both_rewrites, workdir=tmp_path)
    assert code == 0
    assert (tmp_path / "original" / "kernels" / "csrc" / "cache_kernels.cu").read_text() == (
        KERNELS_DIR / "csrc" / "cache_kernels.cu"
    ).read_text()
    assert "std::vector" in (tmp_path / "patched" / "kernels" / "csrc" / "cache_kernels.cu").read_text()
    assert (tmp_path / "reference-patched.log").exists()


def test_text_output_prints_the_sections(capsys):
    code = kv.run_kernel_check("text", rewriter=both_rewrites, kernels_dir=KERNELS_DIR, gpu=False, nvcc=False)
    out = capsys.readouterr().out
    assert code == 0
    for heading in ("rewritten files", "passed", "skipped", "validate: ok (exit 0)"):
        assert heading in out


def test_missing_kernels_fail_with_a_hint(tmp_path, capsys):
    code = kv.run_kernel_check("json", rewriter=both_rewrites, kernels_dir=tmp_path, gpu=False, nvcc=False)
    assert code == kv.EXIT_CHECK_FAILED
    assert kv.KERNELS_DIR_ENV in json.loads(capsys.readouterr().out)["failures"][0]


def test_unknown_format_is_a_usage_error():
    with pytest.raises(ValueError, match="text or json"):
        kv.run_kernel_check("sarif")


TARGET_SHAPE = "layers=32 pairs=1"
QUEUED = "us to return, 5 ms queued"
TARGETS = [
    kv.Target("copy_blocks", TARGET_SHAPE, "host us/call", kv.Bound.SPEEDUP_AT_LEAST, 1.5),
    kv.Target("copy_blocks", TARGET_SHAPE, QUEUED, kv.Bound.PATCHED_BELOW_US, 1000.0),
]


def _checks(ok=True):
    return {"checks": [{"kernel": "copy_blocks", "shape": TARGET_SHAPE, "dtype": "float16", "ok": ok, "detail": "x"}]}


def _timings(original_host, patched_host, original_queued, patched_queued):
    rows = []
    for variant, host, queued in (("original", original_host, original_queued), ("patched", patched_host, patched_queued)):
        rows += [
            {"variant": variant, "kernel": "copy_blocks", "shape": TARGET_SHAPE, "measure": "host us/call",
             "microseconds": host},
            {"variant": variant, "kernel": "copy_blocks", "shape": TARGET_SHAPE, "measure": QUEUED, "microseconds": queued},
        ]
    return rows


def test_gpu_results_become_rows_with_speedups_and_targets():
    report = kv.KernelReport()
    kv.compare_versions({"original": _checks(), "patched": _checks()}, _timings(40.0, 20.0, 5400.0, 30.0), report)
    kv.evaluate_targets(report, TARGETS)
    host_row = report.rows[0]
    assert (host_row.original_us, host_row.patched_us, host_row.speedup, host_row.correct) == (40.0, 20.0, 2.0, True)
    assert report.targets == [
        {"target": "copy_blocks layers=32 pairs=1, host us/call: speedup >= 1.5x", "value": 2.0, "met": True},
        {"target": f"copy_blocks layers=32 pairs=1, {QUEUED}: patched < 1000 us", "value": 30.0, "met": True},
    ]
    assert report.exit_code == 0


def test_a_wrong_patched_result_fails_and_misses_the_targets():
    report = kv.KernelReport()
    kv.compare_versions({"original": _checks(), "patched": _checks(ok=False)}, _timings(40.0, 35.0, 5400.0, 5300.0), report)
    kv.evaluate_targets(report, TARGETS)
    assert not report.rows[0].correct and report.exit_code == kv.EXIT_CHECK_FAILED
    assert report.failures == [f"patched: copy_blocks {TARGET_SHAPE} float16: x"]
    assert [target["met"] for target in report.targets] == [False, False]


def test_the_bounds_are_at_least_and_strictly_below():
    report = kv.KernelReport()
    kv.compare_versions({"original": _checks(), "patched": _checks()}, _timings(30.0, 20.0, 5400.0, 1000.0), report)
    kv.evaluate_targets(report, TARGETS)
    assert [(target["value"], target["met"]) for target in report.targets] == [(1.5, True), (1000.0, False)]


def test_a_target_whose_row_was_not_measured_is_missed_not_dropped():
    report = kv.KernelReport()
    kv.compare_versions({"original": _checks(), "patched": _checks()}, _timings(40.0, 20.0, 5400.0, 30.0), report)
    typo = kv.Target("copy_blocks", "layers=32 pair=1", "host us/call", kv.Bound.SPEEDUP_AT_LEAST, 1.5)
    kv.evaluate_targets(report, [typo])
    assert report.targets == [{"target": "copy_blocks layers=32 pair=1, host us/call: speedup >= 1.5x (not measured)",
                               "value": None, "met": False}]


def test_without_timings_no_target_is_reported():
    report = kv.KernelReport()
    kv.evaluate_targets(report, TARGETS)
    assert report.targets == []


def test_the_bundled_targets_are_the_kernels_data():
    # The two targets of issue 5, read from kernels/targets.json, name rows the
    # harness really writes (its measure names and the sweep's shapes).
    from kernels import cases, harness

    targets = kv.load_targets(KERNELS_DIR)
    assert targets == TARGETS
    shapes = {(workload.kernel, workload.shape) for workload in cases.gpu_sweep()}
    assert all((target.kernel, target.shape) in shapes for target in targets)
    assert QUEUED == f"us to return, {harness.QUEUED_GPU_MILLISECONDS:g} ms queued"


def test_a_kernels_folder_without_targets_has_none(tmp_path):
    assert kv.load_targets(tmp_path) == []


@pytest.mark.parametrize("text", [
    "not json",
    '{"targets": [{"kernel": "copy_blocks", "shape": "s", "measure": "m"}]}',
    '{"targets": [{"kernel": "copy_blocks", "shape": "s", "measure": "m", "speedup_at_least": 1, "patched_below_us": 2}]}',
    '{"targets": [{"kernel": "copy_blocks", "shape": "s", "measure": "m", "speedup_at_least": "1.5"}]}',
    '{"targets": [{"shape": "s", "measure": "m", "speedup_at_least": 1.5}]}',
    '{"target": []}',
])
def test_malformed_targets_fail_the_run_before_any_work_naming_the_file(tmp_path, capsys, text):
    kernels = tmp_path / "kernels"
    shutil.copytree(KERNELS_DIR, kernels, ignore=shutil.ignore_patterns("__pycache__"))
    (kernels / "targets.json").write_text(text)

    def must_not_run(tree):
        raise AssertionError("the rewrite ran although targets.json is malformed")

    code = kv.run_kernel_check("json", rewriter=must_not_run, kernels_dir=kernels, gpu=False, nvcc=False)
    failures = json.loads(capsys.readouterr().out)["failures"]
    assert code == kv.EXIT_CHECK_FAILED
    assert len(failures) == 1 and failures[0].startswith(str(kernels / "targets.json"))


class FakeHarness:
    """Stands in for `python -m kernels.harness` in each tree: records the
    calls and writes what the real one would."""

    def __init__(self, failing_build=None):
        self.calls = []
        self.failing_build = failing_build

    def __call__(self, tree, module, arguments, log_path, result_file=None):
        self.calls.append((tree.name, arguments[0]))
        log_path.write_text("log of " + " ".join(arguments))
        command = arguments[0]
        if command == "build":
            return 1 if self.failing_build and tree.name == self.failing_build else 0
        out = Path(arguments[arguments.index("--out") + 1])
        if command == "check":
            out.write_text(json.dumps(_checks()))
        elif command == "time":
            variants = [arguments[i + 1] for i, a in enumerate(arguments) if a == "--variant"]
            assert variants == ["original", "patched"]
            out.write_text(json.dumps({"environment": {"device": "Fake GPU", "tree": "x"},
                                       "timings": _timings(40.0, 20.0, 5400.0, 30.0)}))
        return 0


def test_the_gpu_flow_builds_checks_each_tree_then_times_both_together(monkeypatch, capsys):
    harness = FakeHarness()
    monkeypatch.setattr(kv, "run_in_tree", harness)
    code = kv.run_kernel_check("json", rewriter=both_rewrites, kernels_dir=KERNELS_DIR, gpu=True)
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["failures"]
    assert sorted(harness.calls[:2]) == [("original", "build"), ("patched", "build")]
    assert harness.calls[2:] == [("original", "check"), ("patched", "check"), ("original", "time")]
    assert report["environment"] == {"device": "Fake GPU"}
    assert len(report["rows"]) == 2 and all(row["correct"] for row in report["rows"])
    assert all(target["met"] for target in report["targets"])


def test_a_failed_build_stops_the_gpu_flow(monkeypatch, capsys):
    harness = FakeHarness(failing_build="patched")
    monkeypatch.setattr(kv, "run_in_tree", harness)
    code = kv.run_kernel_check("json", rewriter=both_rewrites, kernels_dir=KERNELS_DIR, gpu=True)
    report = json.loads(capsys.readouterr().out)
    assert code == kv.EXIT_CHECK_FAILED
    assert len(report["failures"]) == 1
    assert report["failures"][0].startswith("patched: the extension build failed:\nlog of build")
    assert [command for _, command in harness.calls] == ["build", "build"]


def _optpatch_rules_available() -> bool:
    completed = subprocess.run([sys.executable, "-m", "optpatch", "rules"], capture_output=True, text=True, check=False)
    return completed.returncode == 0 and all(code in completed.stdout for code in kv.RULES_UNDER_TEST.split(","))


@pytest.mark.skipif(not _optpatch_rules_available(), reason="optpatch's CLI with OPT101, OPT201 and OPT202 is not available")
def test_optpatch_rewrites_the_bundle_and_both_versions_hold(tmp_path, capsys):
    # The real thing, as CI can run it: optpatch's own rules on the bundle,
    # nvcc on both versions where the headers are present.
    code = kv.run_kernel_check("json", workdir=tmp_path, kernels_dir=KERNELS_DIR, gpu=False)
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["failures"]
    assert report["changed_files"] == ["kernels/cases.py", "kernels/csrc/cache_kernels.cu"]
    patched = (tmp_path / "patched" / "kernels" / "csrc" / "cache_kernels.cu").read_text()
    assert "int64_t key_cache_ptrs[num_layers];" not in patched and ".to(cache_device)" not in patched
    assert "cudaMemcpyAsync" in patched and "std::vector<int64_t>" in patched


def test_without_torch_it_says_how_to_get_it(monkeypatch, capsys):
    monkeypatch.setattr(kv, "torch_installed", lambda: False)
    code = kv.run_kernel_check("json", rewriter=both_rewrites, kernels_dir=KERNELS_DIR, gpu=False)
    assert code == kv.EXIT_CHECK_FAILED
    assert "pip install torch" in json.loads(capsys.readouterr().out)["failures"][0]


def test_the_validate_tier_fixes_are_applied_through_optpatchs_own_validation(tmp_path):
    # On a GPU the default rewriter runs `optpatch apply --validate --build` for OPT203: the harness rebuilds the
    # candidate copy and checks the gather bit for bit, so the fix lands only if that passes.
    options = kv.validated_rewrite_options(tmp_path / "patched")
    given = dict(zip(options[::2], options[1::2]))
    assert given["--select"] == kv.VALIDATED_RULES == "OPT203"
    assert given["--build"].endswith(f"-m kernels.harness build --name {kv.CANDIDATE_EXTENSION} --build-dir "
                                     f"{tmp_path / 'candidate-build'}")
    assert " -m kernels.harness check " in given["--validate"]
    assert given["--validate"].endswith("--kernel gather_cache_flash")
    assert given["-o"] == str(tmp_path / "patched" / "optpatch-validated.diff")
