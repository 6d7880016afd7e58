#!/usr/bin/env bash
# The whole `optpatch validate` flow in one command, for a machine with a
# CUDA GPU, a CUDA build of torch, nvcc and ninja (no network needed).
#
#   kernels/gpu_check.sh   optpatch's own rules rewrite the copy (optpatch's
#                          dependencies must be importable; wheels in ./.whl
#                          are installed to /tmp/site first)
#
# Writes validate.txt, validate.json, validate.svg (the chart, where
# matplotlib imports; else the command that draws it later from
# validate.json), optpatch.diff, optpatch-validated.diff (the validate-tier
# fixes `optpatch apply --validate --build` kept), candidate-check.json (its
# last check), checks-*.json, timings.json and logs.txt to
# $OUT (default ./gpu-check-out); builds stay in /tmp/optpatch-gpu-check.
# Exit status: that of validate (0 or 4).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$repo/gpu-check-out}
if [[ -n "${1:-}" ]]; then
  echo "usage: $0" >&2
  exit 2
fi
mkdir -p "$out"

if [[ -d "$repo/.whl" ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site "$repo"/.whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

python3 - "$out" "$repo" <<'PY'
import shutil
import sys
from pathlib import Path

from optpatch import kernel_chart
from optpatch import kernel_check as kv

out, repo = Path(sys.argv[1]), Path(sys.argv[2])
workdir = Path("/tmp/optpatch-gpu-check")
chart = out / "validate.svg"
redraw = f"optpatch validate --from-report {out / 'validate.json'} --plot {chart}"

# Said before the run, not after it: a GPU machine without matplotlib still
# records the run, and the chart is drawn from its JSON anywhere.
try:
    kernel_chart.require_matplotlib()
    can_draw = True
except kernel_chart.ChartUnavailable as missing:
    print(f"gpu_check.sh: no chart on this machine: {missing}\n  then draw it anywhere with: {redraw}", file=sys.stderr)
    can_draw = False

report = kv.validate(workdir, repo / "kernels", kv.optpatch_rewriter, gpu=kv.gpu_available(), nvcc=True)

with (out / "validate.txt").open("w") as text:
    kv.print_text(report, file=text)
with (out / "validate.json").open("w") as payload:
    kv.print_json(report, file=payload)
kv.print_text(report)
chart.unlink(missing_ok=True)  # an earlier run's chart must not pass for this one's
if can_draw and report.rows:
    kernel_chart.draw_chart(report, chart)
    print(f"gpu_check.sh: chart written to {chart}", file=sys.stderr)
elif can_draw:
    print("gpu_check.sh: no chart: the run has no timings (they need a CUDA GPU)", file=sys.stderr)

for diff in (workdir / "patched" / "optpatch.diff", workdir / "patched" / "optpatch-validated.diff"):
    if diff.exists():
        shutil.copy(diff, out / diff.name)
for results in [*sorted(workdir.glob("checks-*.json")), workdir / "timings.json", workdir / "candidate-check.json"]:
    if not results.exists():
        continue
    shutil.copy(results, out / results.name)
with (out / "logs.txt").open("w") as logs:
    for log in sorted(workdir.glob("*.log")):
        logs.write(f"===== {log.name}\n{log.read_text(errors='replace')}\n")
sys.exit(report.exit_code)
PY
