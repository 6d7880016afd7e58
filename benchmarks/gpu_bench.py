"""`optpatch bench` on examples/decode_loop and `optpatch validate` with its spreads, on a GPU machine (issue 31).

    python3 benchmarks/gpu_bench.py [--out DIR] [--rounds N] [--no-per-rule] [--skip-bench] [--skip-validate] [--cpu]

1. Installs the wheels in ./.whl into /tmp/site, as kernels/gpu_check.sh
   does (no network), and puts ./src first on PYTHONPATH.
2. bench: copies examples/decode_loop into a temporary git repository and
   runs `optpatch bench "<python> serve.py --steps 3000" --metric "decode:
   ([\\d,.]+) tokens/s" --higher-is-better --rounds N --json --plot` there
   (CUDA, as serve.py picks it).
3. validate: `optpatch validate --format json --plot`, then the same report
   as text (`--from-report`).
4. When the time left holds it (foreseen from the bench's own length):
   `optpatch bench --per-rule --rounds 5`.
5. Writes to DIR (default ./gpu-bench-out): bench.json, bench.svg,
   bench-per-rule.json, validate.json, validate.svg, validate.txt, and
   gpu-bench.md, the tables for docs/benchmarks.md; prints gpu-bench.md.

A phase whose dependency is missing (scipy for bench, libclang for
validate's C++ rules, a CUDA device for either) is skipped and says why;
the other still runs. Each phase has its own time limit, so the whole stays
under DEADLINE_S. Exit status: 0 when every phase that ran finished with
its command's status 0, else 1.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "decode_loop"
METRIC = r"decode: ([\d,.]+) tokens/s"
SITE = Path("/tmp/site")
DEADLINE_S = 420  # the whole script, inside the 8 minutes it may take on the GPU machine (wheels and start-up aside)
VALIDATE_LIMIT_S = 240  # its rewrite, two extension builds in parallel, the checks and the timings
BENCH_LIMIT_S = 200  # 10 rounds and a warm-up of two trees: 22 runs of serve.py, a few seconds each
PER_RULE_ROUNDS = 5  # the fewest `optpatch bench` takes
STEPS = 3000  # ~2 s of decode a run: at 500 steps (0.3 s) the H100 runs varied 45k-100k tokens/s, round to round
sys.path.insert(0, str(REPO / "src"))  # kernel_report, for the tables: the standard library only


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "gpu-bench-out")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--no-per-rule", dest="per_rule", action="store_false",
                        help="no `bench --per-rule` (it runs only when the time left holds it anyway)")
    parser.add_argument("--skip-bench", action="store_true")
    parser.add_argument("--skip-validate", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="bench without CUDA too: a dry run of the flow")
    args = parser.parse_args()
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment_with_wheels()
    facts = machine_facts()
    log(f"{facts}")
    deadline = started + DEADLINE_S
    phases: dict[str, dict] = {}
    skip = None if args.skip_bench else bench_skip_reason(args, env, facts)
    with tempfile.TemporaryDirectory(prefix="decode-loop-") as scratch:
        repo = make_example_repo(Path(scratch) / "decode_loop")
        if not args.skip_bench:  # first: the acceptance's figure; validate next; the per-rule rounds fill what is left
            phases["bench"] = {"skipped": skip} if skip else bench(args, env, repo, [
                "--rounds", str(args.rounds), "--plot", str(args.out / "bench.svg")], "bench.json", BENCH_LIMIT_S)
        if not args.skip_validate:
            phases["validate"] = run_kernel_check(args.out, env, facts, min(VALIDATE_LIMIT_S, deadline - time.monotonic() - 30))
        if not args.skip_bench and not skip and args.per_rule:
            phases["bench-per-rule"] = per_rule_bench(args, env, repo, phases["bench"], deadline)
    summary = {"machine": facts, "phases": phases, "seconds": round(time.monotonic() - started, 1)}
    (args.out / "gpu-bench-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    markdown = render_markdown(args.out, summary)
    (args.out / "gpu-bench.md").write_text(markdown)
    print(markdown)
    return 0 if all(phase.get("status") in (0, None) for phase in phases.values()) else 1


def log(message: str) -> None:
    print(f"gpu_bench: {message}", file=sys.stderr, flush=True)


def environment_with_wheels() -> dict[str, str]:
    """os.environ with ./.whl installed to /tmp/site and ./src on PYTHONPATH, for every child process."""
    wheels = sorted((REPO / ".whl").glob("*.whl"))
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(SITE), *map(str, wheels)], check=True)
    paths = [str(REPO / "src"), *([str(SITE)] if wheels else []), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p), PYTHONUNBUFFERED="1")
    env.setdefault("OPTPATCH_CACHE_DIR", tempfile.mkdtemp(prefix="optpatch-cache-"))
    return env


def machine_facts() -> dict:
    facts = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "python": sys.version.split()[0], "commit": git_commit()}
    try:
        import torch

        facts.update(torch=torch.__version__, cuda=torch.version.cuda,
                     device=torch.cuda.get_device_name() if torch.cuda.is_available() else None)
    except ImportError:
        facts.update(torch=None, cuda=None, device=None)
    smi = shutil.which("nvidia-smi")
    if smi:
        query = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True)
        facts["driver"] = query.stdout.strip().splitlines()[0] if query.returncode == 0 and query.stdout.strip() else None
    return facts


def git_commit() -> str | None:
    completed = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return completed.stdout.strip() if completed.returncode == 0 else None


def importable(module: str, env: dict[str, str]) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True)
    return probe.returncode == 0


# -- bench ------------------------------------------------------------------------------------


def bench_skip_reason(args, env: dict[str, str], facts: dict) -> str | None:
    if facts.get("device") is None and not args.cpu:
        return "no CUDA device: the decode loop would run its small CPU size"
    if not importable("scipy.stats", env):
        return ("scipy is not importable: add its cp312 wheel to ./.whl (pip download scipy --only-binary=:all: "
                "--python-version 3.12 --platform manylinux_2_28_x86_64 --no-deps -d .whl)")
    return None


def bench(args, env: dict[str, str], repo: Path, options: list[str], name: str, limit_s: float) -> dict:
    """`optpatch bench` of serve.py in REPO with OPTIONS; its JSON in args.out / NAME."""
    command = f"{sys.executable} serve.py --steps {STEPS}"
    arguments = ["bench", command, "--repo", str(repo), "--metric", METRIC, "--higher-is-better", "--json", *options]
    return optpatch_json(arguments, args.out / name, env, timeout=limit_s)


def per_rule_bench(args, env: dict[str, str], repo: Path, main_bench: dict, deadline: float) -> dict:
    """`bench --per-rule --rounds 5` (five trees: original, patched, one per rule), when the time left holds it.

    Its length is foreseen from the main bench's: that one ran (rounds + 1
    warm-up) x 2 runs; this one runs (5 + 1) x 5, and a third more for safety.
    """
    if main_bench.get("status") != 0:
        return {"skipped": "the main bench did not pass"}
    per_run = main_bench["seconds"] / ((args.rounds + 1) * 2)
    needed = (PER_RULE_ROUNDS + 1) * 5 * per_run * 1.33 + 20
    left = deadline - time.monotonic()
    if needed > left:
        return {"skipped": f"it would take about {needed:.0f} s and {left:.0f} s are left of the {DEADLINE_S} s budget"}
    return bench(args, env, repo, ["--per-rule", "--rounds", str(PER_RULE_ROUNDS)], "bench-per-rule.json", left)


def make_example_repo(path: Path) -> Path:
    """examples/decode_loop as a git repository of its own, as a user's would be (without git: a folder, copied whole)."""
    shutil.copytree(EXAMPLE, path, ignore=shutil.ignore_patterns("__pycache__"))
    if shutil.which("git") is None:
        log("no git on this machine: optpatch bench copies the folder whole")
        return path
    identity = ["-c", "user.name=gpu_bench", "-c", "user.email=gpu_bench@example.com"]
    for git in (["init", "-q"], [*identity, "add", "-A"], [*identity, "commit", "-q", "-m", "decode_loop"]):
        subprocess.run(["git", *git], cwd=path, check=True)
    return path


def optpatch_json(arguments: list[str], out: Path, env: dict[str, str], timeout: float) -> dict:
    """Run `python -m optpatch ARGUMENTS`, keep its JSON in OUT; the phase's record."""
    log(f"optpatch {' '.join(arguments[:2])} ... (limit {timeout:.0f} s)")
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "optpatch", *arguments], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()  # SIGTERM: optpatch stops its command's process group and removes its trees
        _, stderr = process.communicate(timeout=60)
        return {"status": "timeout", "seconds": round(time.monotonic() - started, 1), "stderr_tail": stderr[-3000:]}
    out.write_text(stdout)
    sys.stderr.write(stderr[-4000:])
    return {"status": process.returncode, "seconds": round(time.monotonic() - started, 1), "file": out.name,
            "stderr_tail": stderr[-3000:]}


# -- validate ---------------------------------------------------------------------------------


def run_kernel_check(out: Path, env: dict[str, str], facts: dict, limit_s: float) -> dict:
    if facts.get("device") is None:
        return {"skipped": "no CUDA device: validate would only compile and check the reference"}
    if not importable("clang.cindex", env):
        return {"skipped": "libclang is not importable: its wheel (libclang-ng) belongs in ./.whl"}
    report = out / "validate.json"
    phase = optpatch_json(["validate", "--format", "json", "--plot", str(out / "validate.svg")], report, env,
                          timeout=limit_s)
    if report.exists() and report.stat().st_size:
        text = subprocess.run([sys.executable, "-m", "optpatch", "validate", "--from-report", str(report)], env=env,
                              capture_output=True, text=True, timeout=120)
        (out / "validate.txt").write_text(text.stdout)
    return phase


# -- the tables -------------------------------------------------------------------------------


def render_markdown(out: Path, summary: dict) -> str:
    facts = summary["machine"]
    lines = [f"Machine: {facts.get('device')}, driver {facts.get('driver')}, torch {facts.get('torch')}, "
             f"CUDA {facts.get('cuda')}, Python {facts.get('python')}, {facts.get('date')}, optpatch commit "
             f"{facts.get('commit') or 'unknown (no .git here)'}; whole script {summary['seconds']} s.", ""]
    for name, phase in summary["phases"].items():
        if "skipped" in phase:
            lines += [f"{name}: skipped: {phase['skipped']}", ""]
        elif name.startswith("bench"):
            lines += bench_table(out / phase["file"], name, phase) if phase.get("file") else [f"{name}: {phase}", ""]
        else:
            lines += validate_table(out / "validate.json", phase)
    return "\n".join(lines) + "\n"


def bench_table(path: Path, name: str, phase: dict) -> list[str]:
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return [f"{name}: exit {phase['status']}, no JSON; stderr:", "", "    " + phase.get("stderr_tail", "")[-1500:], ""]
    lines = [f"### `optpatch bench` on examples/decode_loop ({name}, exit {result['exit_code']}, {phase['seconds']} s)", "",
             f"`{result['command']}`, metric `{result['metric']['pattern']}` (higher is better), "
             f"{result['warmup_rounds']} warm-up round(s), ABBA order.", ""]
    if result["failure"]:
        return lines + [f"Failed: {result['failure']['message']}", "", "```", result["failure"]["output_tail"], "```", ""]
    rounds = len(result["values"]["original"])
    lines += ["| tree | fixes | median tokens/s | speedup | 95% interval | difference | rounds |",
              "|---|---:|---:|---:|---|---|---:|",
              f"| original | 0 | {median(result['values']['original']):,.0f} | | | | {rounds} |"]
    fixes = {variant["label"]: variant["fixes"] for variant in result["variants"]}
    for c in result["comparisons"]:
        lines.append(f"| {c['label']} | {fixes.get(c['label'], '')} | {c['patched_median']:,.0f} | {c['speedup']:.3f}x "
                     f"| {c['low']:.3f}x - {c['high']:.3f}x | {c['difference']} | {c['rounds']} |")
    return lines + [""]


def median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def validate_table(path: Path, phase: dict) -> list[str]:
    from optpatch.validation.kernel_report import Reading, noise_bands, read_report, reading

    try:
        report = read_report(path)
    except Exception as error:  # noqa: BLE001  (a crashed run leaves no report; say so and go on)
        return [f"validate: exit {phase.get('status')}, no report ({error})", ""]
    bands = noise_bands(report.rows)
    readings = [reading(row, bands) for row in report.rows]
    unchanged = [row for row in report.rows if row.code_changed is False and row.speedup is not None]
    lines = [f"### `optpatch validate` with spreads (exit {phase.get('status')}, {phase.get('seconds')} s)", "",
             "Median (interquartile range) in microseconds; the speedup's range from the quartiles; the reading "
             "against the row's spread and the measure's noise band.", "",
             "| kernel | shape | measure | original | patched | speedup | reading | correct |",
             "|---|---|---|---:|---:|---:|---|---|"]
    for row, judged in zip(report.rows, readings):
        spread = row.speedup_range
        ratio = "-" if row.speedup is None else f"{row.speedup:.2f}x" + ("" if spread is None else f" ({spread[0]:.2f}-{spread[1]:.2f})")
        lines.append(f"| {row.kernel} | {row.shape} | {row.measure} | {cell(row.original_us, row.original_q1, row.original_q3)} "
                     f"| {cell(row.patched_us, row.patched_q1, row.patched_q3)} | {ratio} | {judged.value} "
                     f"| {'yes' if row.correct else 'NO'} |")
    lines += ["", *(f"- noise of {measure}: {low:.2f}x-{high:.2f}x (ratios of the kernels whose code is unchanged)"
                    for measure, (low, high) in bands.items()),
              f"- rows of kernels whose code is unchanged: {len(unchanged)}, ratios "
              + (f"{min(r.speedup for r in unchanged):.2f}x-{max(r.speedup for r in unchanged):.2f}x" if unchanged else "-"),
              f"- rows read faster: {sum(r is Reading.FASTER for r in readings)}, slower: "
              f"{sum(r is Reading.SLOWER for r in readings)}, within noise: {sum(r is Reading.WITHIN_NOISE for r in readings)}",
              f"- targets: {json.dumps(report.targets)}", f"- failures: {len(report.failures)}", ""]
    return lines


def cell(value: float | None, q1: float | None, q3: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" + ("" if q1 is None or q3 is None else f" ({q1:,.1f}-{q3:,.1f})")


if __name__ == "__main__":
    sys.exit(main())
