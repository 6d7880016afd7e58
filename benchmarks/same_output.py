"""Record what optpatch finds and writes on a tree, to compare two commits byte for byte.

    python benchmarks/same_output.py TREE OUT_DIR [optpatch options...]

Writes OUT_DIR/patch.diff (the patch of every fix in every area, unsafe and
validate tiers aside) and OUT_DIR/findings.txt: one JSON object per finding,
keys sorted, in the report's order, with the policy's decision under the
names of the current JSON schema (`accepted`, `written`) whatever the
version that wrote it. A refactoring that changes no behaviour leaves both
files byte-identical: `cmp` them, or `diff -r` two OUT_DIRs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

# Schema 3 named the policy's acceptance "fixable" and the write "applied" (docs/json-schema.md).
RENAMED = {"fixable": "accepted", "applied": "written"}


def record(tree: Path, out: Path, extra: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "optpatch", "check", str(tree), "--diff", "--exit-zero", "--no-cache",
                   "--fix-areas", "library,tests,benchmarks", "--json-output", str(report), "-q", *extra]
        done = subprocess.run(command, capture_output=True, text=True)
        (out / "patch.diff").write_text(done.stdout)
        findings = json.loads(report.read_text())["findings"] if report.exists() else []
    lines = [json.dumps({RENAMED.get(k, k): v for k, v in f.items()}, sort_keys=True) for f in findings]
    (out / "findings.txt").write_text("\n".join(lines) + "\n")
    print(f"{tree}: {len(findings)} findings, {done.stdout.count(chr(10))} patch lines, exit {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(0 if record(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]) in (0, 1) else 1)
