"""benchmarks/gpu_bench.py, the parts that need no GPU: the tables it writes for docs/benchmarks.md.

The GPU run is the lead's (docs/benchmarks.md has its command); `--cpu` runs the
whole flow without CUDA by hand. Here its tables are made from a bench and a
validate report like the ones the run writes.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from optpatch.validation import kernels
from optpatch.validation.kernel_report import ComparisonRow

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_bench.py"
_spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
gpu = importlib.util.module_from_spec(_spec)
sys.modules["gpu_bench"] = gpu
_spec.loader.exec_module(gpu)

BENCH = {
    "command": "python serve.py --steps 500", "metric": {"pattern": gpu.METRIC}, "warmup_rounds": 1, "exit_code": 0,
    "failure": None, "values": {"original": [100.0, 102.0], "patched": [120.0, 121.0]},
    "variants": [{"label": "patched", "fixes": 3, "files": ["decode_loop/engine.py"]}],
    "comparisons": [{"label": "patched", "rounds": 2, "original_median": 101.0, "patched_median": 120.5,
                     "speedup": 1.193, "low": 1.17, "high": 1.21, "excludes_one": True, "difference": "faster"}],
}


def test_the_tables_give_the_bench_interval_and_the_validate_spreads_and_readings(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps(BENCH))
    rows = [ComparisonRow("copy_blocks", "s", "host us/call", 40.0, 20.0, 2.0, True, 39.0, 41.0, 19.0, 21.0, True),
            ComparisonRow("swap_blocks", "s", "host us/call", 10.0, 20.4, 10 / 20.4, True, 9.5, 10.5, 19.0, 21.0, False)]
    with (tmp_path / "validate.json").open("w") as file:
        kernels.print_json(kernels.KernelReport(rows=rows), file=file)
    summary = {"machine": {"device": "Test GPU", "torch": "2.11", "cuda": "13.0"}, "seconds": 1.0, "phases": {
        "validate": {"status": 0, "seconds": 1.0, "file": "validate.json"},
        "bench": {"status": 0, "seconds": 1.0, "file": "bench.json"},
        "bench-per-rule": {"skipped": "60 s left"}}}
    markdown = gpu.render_markdown(tmp_path, summary)
    assert "| patched | 3 | 120 | 1.193x | 1.170x - 1.210x | faster | 2 |" in markdown
    assert "| copy_blocks | s | host us/call | 40.0 (39.0-41.0) | 20.0 (19.0-21.0) | 2.00x (1.86-2.16) | faster | yes |" in markdown
    assert "| swap_blocks | s | host us/call | 10.0 (9.5-10.5) | 20.4 (19.0-21.0) | 0.49x (0.45-0.55) | code unchanged | yes |" in markdown
    assert "- noise of host us/call: 0.49x-1.00x" in markdown and "slower: 0" in markdown
    assert "bench-per-rule: skipped: 60 s left" in markdown
