"""examples/decode_loop: its per-step path has one default fix of each Python rule, and its patched CMD still runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "decode_loop"
METRIC = r"decode: ([\d,.]+) tokens/s"  # the regex README.md and benchmarks/gpu_bench.py give --metric


def test_the_decode_step_gets_an_opt101_opt102_and_opt103_fix_by_default_and_still_runs(tmp_path):
    copy = tmp_path / "decode_loop"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    applied = subprocess.run([sys.executable, "-m", "optpatch", "apply", str(copy), "--write", "--jobs", "1",
                              "-o", str(tmp_path / "patch.diff"), "--format", "json"],
                             capture_output=True, text=True, timeout=300)
    assert applied.returncode == 0, applied.stderr
    fixes = [f for f in json.loads(applied.stdout)["findings"] if f["written"]]
    assert sorted((f["code"], f["path"], f["tier"]) for f in fixes) == [
        ("OPT101", "decode_loop/engine.py", "safe"), ("OPT102", "decode_loop/engine.py", "safe"),
        ("OPT103", "decode_loop/engine.py", "safe")]
    served = subprocess.run([sys.executable, "serve.py", "--steps", "2", "--warmup", "1", "--device", "cpu"],
                            cwd=copy, capture_output=True, text=True, timeout=300)
    assert served.returncode == 0, served.stderr
    assert float(re.search(METRIC, served.stdout).group(1).replace(",", "")) > 0
