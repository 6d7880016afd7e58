"""--profile: a real torch.profiler trace of a fixture model ranks its sites by what was measured.

tests/fixtures/frequency/profiled/model.py has a one-time site (a table made
in the constructor) and a per-step one (in a method `forward` reaches through
`getattr`, which the call graph cannot follow: statically it is unreached).
The test records the trace with torch's CPU profiler, as docs/profiling.md
says to, and passes it to `optpatch check --profile`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli

MODEL = FIXTURES / "frequency" / "profiled"

RECORD = """
import importlib.util, sys
import torch
from torch.profiler import ProfilerActivity, profile
spec = importlib.util.spec_from_file_location("profiled_model", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
    net = module.Net()
    for _ in range(5):
        net(torch.randn(8, 4))
prof.export_chrome_trace(sys.argv[2])
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("torch")
    root = Path(shutil.copytree(MODEL, tmp_path_factory.mktemp("profiled") / "proj"))
    trace = root.parent / "trace.json"
    subprocess.run([sys.executable, "-c", RECORD, str(root / "model.py"), str(trace)], check=True, capture_output=True,
                   timeout=300)
    return root, trace


def test_the_per_step_site_comes_first_with_its_measured_count(traced):
    root, trace = traced
    report = json.loads(run_cli("check", str(root), "--no-cache", "--profile", str(trace), "--output-format", "json",
                                "--exit-zero").stdout)
    first, second = report["findings"]  # JSON keeps path order: the one-time site is first in the file
    assert (second["line"], first["line"]) == (20, 6)
    assert second["frequency"]["frequency"] == "per-step"
    assert second["frequency"]["source"] == "measured by the profile"
    assert second["frequency"]["static"] == "unreached"  # the measurement overrides the call graph, and says so
    assert second["frequency"]["measured"]["calls"] == 5
    assert second["frequency"]["measured"]["ops"] == ["aten::zeros"]
    assert first["frequency"]["frequency"] == "one-time" and first["frequency"]["measured"]["calls"] == 1
    assert first["impact"] == "low"
    shown = run_cli("check", str(root), "--no-cache", "--profile", str(trace), "--output-format", "concise",
                    "--exit-zero").stdout.splitlines()
    assert [line.split(": OPT")[0] for line in shown[:2]] == ["model.py:20:15", "model.py:6:13"]
    assert "measured: 5 call(s)" in shown[0] or "measured: 5 call(s)" in " ".join(
        run_cli("explain", f"{root}:model.py:20", "--no-cache", "--profile", str(trace)).stdout.split())


def test_without_the_profile_the_static_frequency_ranks_the_one_time_site_first(traced):
    root, _ = traced
    shown = run_cli("check", str(root), "--no-cache", "--output-format", "concise", "--exit-zero").stdout.splitlines()
    assert [line.split(": OPT")[0] for line in shown[:2]] == ["model.py:6:13", "model.py:20:15"]


def test_a_py_spy_profile_gives_time_by_line(tmp_path):
    root = Path(shutil.copytree(MODEL, tmp_path / "proj"))
    frames = [{"name": "<module>", "file": "/elsewhere/run.py", "line": 3},
              {"name": "mix", "file": "/gpu-box/checkout/model.py", "line": 20},
              {"name": "make_table", "file": "/gpu-box/checkout/model.py", "line": 6}]
    profile = {"$schema": "https://www.speedscope.app/file-format-schema.json", "shared": {"frames": frames},
               "profiles": [{"type": "sampled", "name": "py-spy", "unit": "seconds", "startValue": 0, "endValue": 1,
                             "samples": [[0, 1]] * 30 + [[0, 2]] + [[0]] * 69, "weights": [0.01] * 100}]}
    (tmp_path / "spy.json").write_text(json.dumps(profile))
    report = json.loads(run_cli("check", str(root), "--no-cache", "--profile", str(tmp_path / "spy.json"),
                                "--output-format", "json", "--exit-zero").stdout)
    measured = {f["line"]: f["frequency"]["measured"] for f in report["findings"]}
    assert measured[20] == {"calls": None, "microseconds": 300000.0, "ops": ["samples"], "profile": "spy.json"}
    assert measured[6]["microseconds"] == 10000.0
    assert [f["impact"] for f in report["findings"]] == ["low", "high"]  # 30% of the samples, per-step


def test_a_file_that_is_no_profile_is_a_usage_error(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "trace.json").write_text("{\"nothing\": 1}")
    result = run_cli("check", str(tmp_path), "--no-cache", "--profile", str(tmp_path / "trace.json"))
    assert result.returncode == 2 and "neither a Chrome trace" in result.stderr
