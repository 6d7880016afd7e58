"""Record what optpatch finds and writes on a tree, to compare two commits byte for byte.

    python benchmarks/same_output.py TREE OUT_DIR [optpatch options...]
    python benchmarks/same_output.py --normalise OLD_FINDINGS > FINDINGS

Writes OUT_DIR/patch.diff (the patch of every fix in every area, unsafe and
validate tiers aside) and OUT_DIR/findings.txt: one JSON object per finding,
keys sorted, in the report's order, with the policy's decision under the
names of the current JSON schema (`accepted`, `written`) whatever the
version that wrote it. A refactoring that changes no behaviour leaves both
files byte-identical: `cmp` them, or `diff -r` two OUT_DIRs. `--normalise`
rewrites a findings.txt recorded under older names (this script's RENAMED of
an earlier commit) under today's, so it compares with a new recording.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

# Schema 3 named the policy's acceptance "fixable", the write "applied" and the refusal's words
# "not_applied_because"; schema 4 names them as the code does (docs/json-schema.md).
RENAMED = {"fixable": "accepted", "applied": "written", "not_applied_because": "refused_because"}


def normalised(finding: dict) -> str:
    return json.dumps({RENAMED.get(k, k): v for k, v in finding.items()}, sort_keys=True)


def record(tree: Path, out: Path, extra: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "optpatch", "check", str(tree), "--diff", "--exit-zero", "--no-cache",
                   "--fix-areas", "library,tests,benchmarks", "--json-output", str(report), "-q", *extra]
        done = subprocess.run(command, capture_output=True, text=True)
        (out / "patch.diff").write_text(done.stdout)
        findings = json.loads(report.read_text())["findings"] if report.exists() else []
    lines = [normalised(f) for f in findings]
    (out / "findings.txt").write_text("\n".join(lines) + "\n")
    print(f"{tree}: {len(findings)} findings, {done.stdout.count(chr(10))} patch lines, exit {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    if sys.argv[1] == "--normalise":
        recorded = [json.loads(line) for line in Path(sys.argv[2]).read_text().splitlines() if line]
        sys.stdout.write("\n".join(normalised(f) for f in recorded) + "\n")
        sys.exit(0)
    sys.exit(0 if record(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]) in (0, 1) else 1)
