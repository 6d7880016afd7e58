#!/usr/bin/env bash
# The whole `optpatch validate` flow in one command, for a machine with a
# CUDA GPU, a CUDA build of torch, nvcc and ninja (no network needed).
#
#   kernels/gpu_check.sh             optpatch's own rules rewrite the copy
#                                    (optpatch and its dependencies must be
#                                    importable; wheels in ./.whl are
#                                    installed to /tmp/site first)
#   kernels/gpu_check.sh --dry-run   no rules: this script's own expectation
#                                    of the rewrite stands in, to try the
#                                    build/check/timing path before the rules
#                                    exist; its report says so
#
# Writes validate.txt, validate.json, optpatch.diff, checks-*.json,
# timings.json and logs.txt to $OUT (default ./gpu-check-out); builds stay in
# /tmp/optpatch-gpu-check. Exit status: that of validate (0 or 4).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$repo/gpu-check-out}
mode=rules
if [[ "${1:-}" == "--dry-run" ]]; then
  mode=dry-run
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--dry-run]" >&2
  exit 2
fi
mkdir -p "$out"

if [[ "$mode" == rules && -d "$repo/.whl" ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site "$repo"/.whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

python3 - "$mode" "$out" "$repo" <<'PY'
import difflib
import shutil
import sys
from pathlib import Path

from optpatch import kernel_validation as kv

mode, out, repo = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
workdir = Path("/tmp/optpatch-gpu-check")


def expected_rewrite(tree: Path) -> None:
    """What OPT201, OPT202 and OPT101 are expected to make of the bundle;
    for the dry run only, never part of the product."""
    cuda = tree / "kernels" / "csrc" / "cache_kernels.cu"
    before = cuda.read_text()
    after = before.replace("#include <algorithm>\n", "#include <algorithm>\n#include <vector>\n", 1)
    for table in ("key_cache_ptrs", "value_cache_ptrs"):
        after = after.replace(f"  int64_t {table}[num_layers];",
                              f"  std::vector<int64_t> {table}(num_layers);", 1)
        after = after.replace(
            f"  torch::Tensor {table}_on_device =\n"
            f"      torch::from_blob({table}, {{num_layers}}, torch::kInt64)\n"
            f"          .to(cache_device);\n",
            f"  torch::Tensor {table}_on_device = torch::empty(\n"
            f"      {{num_layers}}, torch::TensorOptions(torch::kInt64).device(cache_device));\n"
            f"  C10_CUDA_CHECK(cudaMemcpyAsync({table}_on_device.data_ptr(), {table}.data(),\n"
            f"                                 num_layers * sizeof(int64_t), cudaMemcpyHostToDevice,\n"
            f"                                 at::cuda::getCurrentCUDAStream()));\n",
            1,
        )
    python = tree / "kernels" / "cases.py"
    python_before = python.read_text()
    python_after = python_before.replace("tensor = torch.zeros(shape,", "tensor = torch.empty(shape,", 1)
    if after.count("std::vector<int64_t>") != 2 or ".to(cache_device)" in after or python_after == python_before:
        raise kv.RewriteFailed("the dry-run expectation no longer matches kernels/; update gpu_check.sh")
    patch = []
    for path, old, new in ((cuda, before, after), (python, python_before, python_after)):
        name = path.relative_to(tree).as_posix()
        patch += difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}")
        path.write_text(new)
    (tree / "optpatch.diff").write_text("".join(patch))


rewriter = expected_rewrite if mode == "dry-run" else kv.optpatch_rewriter
report = kv.validate(workdir, repo / "kernels", rewriter, gpu=kv.gpu_available(), nvcc=True)
if mode == "dry-run":
    report.skipped.insert(0, "optpatch's rules: DRY RUN, the rewrite is gpu_check.sh's expectation")

with (out / "validate.txt").open("w") as text:
    kv.print_text(report, file=text)
with (out / "validate.json").open("w") as payload:
    kv.print_json(report, file=payload)
kv.print_text(report)

diff = workdir / "patched" / "optpatch.diff"
if diff.exists():
    shutil.copy(diff, out / "optpatch.diff")
for results in [*sorted(workdir.glob("checks-*.json")), workdir / "timings.json"]:
    if not results.exists():
        continue
    shutil.copy(results, out / results.name)
with (out / "logs.txt").open("w") as logs:
    for log in sorted(workdir.glob("*.log")):
        logs.write(f"===== {log.name}\n{log.read_text(errors='replace')}\n")
sys.exit(report.exit_code)
PY
