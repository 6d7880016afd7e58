"""The C++ header modes on real trees: what they cost (issue 19's budgets) and what they change.

    PYTHONPATH=src python benchmarks/cpp_headers.py budgets TREE... [--pre-commit FILE] [--markdown]
    PYTHONPATH=src python benchmarks/cpp_headers.py candidates TREE...
    PYTHONPATH=src python benchmarks/cpp_headers.py acceptance TREE... [--jobs N] [--ruff PATH] [--json FILE]

`budgets` runs, for each TREE, one run each of `optpatch check TREE --select
OPT2 --unsafe-fixes -j 2` (wall, CPU, peak resident memory of the whole
process tree, workers and parse children included):

- header-free: `--no-headers --no-cache`;
- headers, first: an empty cache directory, so every precompiled header the
  run needs is built (`--no-cache` otherwise);
- headers, cold: `--no-cache` again, the precompiled headers kept: the
  issue's "cold scan in header mode";

and how many files were parsed with headers, fell back, or needed none.
`--pre-commit FILE` copies FILE into a fresh git repository and runs
`optpatch check --force-exclude FILE` there as the pre-commit hook does:
first with an empty cache directory, then, after an edit to the file (a
changed file is never in the result cache), with the precompiled header
kept.

`acceptance` (issue 30) runs, for each TREE in turn, the whole `optpatch
check TREE --jobs N --no-cache` (every rule): header-free (`--no-headers`),
with headers and an empty cache directory (the first run on a machine: it
builds a precompiled header only where a fix rests on the parse, and puts
the others off), and with headers again, that cache directory kept (the
second run: it builds what the first put off); and `ruff check --select
ALL --no-cache TREE`. It prints wall and CPU time, the ratios header mode /
header-free and header-free / ruff, the load average before and after,
what became of the parses with headers, the missing headers, and whether
the findings are identical in the files whose headers were not used (they
must be). `--json FILE` writes it all.

`candidates` parses every C++/CUDA file of each TREE without headers and
counts the array declarations clang types as variable-length; parses again
with headers (inferred flags) every file that holds one, or a declaration
the header-free parse dropped, or a `from_blob`, and counts those that are
still variable-length; lists every OPT201 and OPT202 finding the parse with
headers gives; and checks the gate (`Rule.needs_headers`) against parsing
every such file with headers: the findings must be the same. For public
checkouts; nothing here is a test, and nothing is committed from them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scan import machine, timed  # noqa: E402

from optpatch.cpp_frontend import CppUnit  # noqa: E402
from optpatch.rule.cpp import CursorKind, TypeKind  # noqa: E402
from optpatch.cpp_headers import HeaderOutcome, HeaderSetup  # noqa: E402
from optpatch.passes import analyse_text  # noqa: E402
from optpatch.rule import Rule, load_rules, select_rules  # noqa: E402
from optpatch.source import SourceFile, language_of, read_source  # noqa: E402

OPTIONS = ("--select", "OPT2", "--unsafe-fixes", "-j", "2", "--format", "json")


@dataclass
class Run:
    label: str
    wall: float
    cpu: float
    peak: int
    parsed: dict[str, int]  # header outcome -> files


def check(target: Path, cache: Path, *extra: str, cwd: Path | None = None) -> Run:
    import json

    command = [sys.executable, "-m", "optpatch", "check", str(target), *OPTIONS, *extra]
    environment = dict(os.environ, OPTPATCH_CACHE_DIR=str(cache))
    if cwd is not None:
        command = ["env", "-C", str(cwd), *command]
    wall, cpu, peak, code, output = timed(command, env=environment)
    if code not in (0, 1):
        raise SystemExit(f"`{' '.join(command)}` exited {code}")
    document = json.loads(output)
    parsed: dict[str, int] = {}
    for entry in document["cpp_headers"]:
        parsed[entry["outcome"]] = parsed.get(entry["outcome"], 0) + 1
    return Run("", wall, cpu, peak, parsed)


def budgets(trees: list[Path], pre_commit: Path | None, markdown: bool) -> None:
    rows: list[tuple[str, Run]] = []
    for tree in trees:
        with tempfile.TemporaryDirectory(prefix="optpatch-headers-") as scratch:
            cache = Path(scratch) / "cache"
            free = check(tree, cache, "--no-headers", "--no-cache")
            first = check(tree, cache, "--no-cache")
            cold = check(tree, cache, "--no-cache")
        for label, run in (("header-free", free), ("headers, first run", first), ("headers, cold", cold)):
            rows.append((f"{tree.name}: {label}", run))
        print(f"{tree.name}: headers cold / header-free = {cold.wall / free.wall:.2f}x wall, "
              f"{cold.cpu / free.cpu:.2f}x CPU", file=sys.stderr)
    if pre_commit is not None:
        rows += _pre_commit(pre_commit)
    _table(rows, markdown)


def _pre_commit(file: Path) -> list[tuple[str, Run]]:
    with tempfile.TemporaryDirectory(prefix="optpatch-precommit-") as scratch:
        repo, cache = Path(scratch) / "repo", Path(scratch) / "cache"
        repo.mkdir()
        target = repo / file.name
        shutil.copy(file, target)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        first = check(target, cache, "--force-exclude", cwd=repo)
        target.write_text(target.read_text() + "\n// edited\n")
        cached = check(target, cache, "--force-exclude", cwd=repo)
    return [(f"pre-commit {file.name}: first run", first), (f"pre-commit {file.name}: precompiled header kept", cached)]


def _table(rows: list[tuple[str, Run]], markdown: bool) -> None:
    header = ("run", "wall s", "CPU s", "peak RSS MiB", "files with headers: used / fell back / not needed")
    lines = []
    for label, run in rows:
        fell_back = run.parsed.get("failed", 0) + run.parsed.get("timed out", 0) + run.parsed.get("unavailable", 0)
        counts = f"{run.parsed.get('used', 0)} / {fell_back} / {run.parsed.get('not needed', 0) + run.parsed.get('disabled', 0)}"
        lines.append((label, f"{run.wall:.2f}", f"{run.cpu:.2f}", f"{run.peak / 2**20:.0f}", counts))
    print(f"{machine()}, {time.strftime('%Y-%m-%d')}")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(str(row[i])) for row in [header, *lines]) for i in range(len(header))]
    for row in [header, *lines]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))


# -- candidates ----------------------------------------------------------------------------------------------------

_CANDIDATE = re.compile(r"\b[A-Za-z_]\w*\s*\[|\bfrom_blob\b")


def candidates(trees: list[Path]) -> int:
    rules = select_rules(load_rules(), ["OPT201", "OPT202"])
    opt201 = sys.modules[rules[0].__module__.rsplit(".", 1)[0] + ".candidates"]
    differences = 0
    for tree in trees:
        setup = HeaderSetup.for_run(tree, None, True)
        free_vlas = header_vlas = files_with_headers = failed = 0
        findings: list[str] = []
        for path in sorted(p for p in tree.rglob("*") if p.is_file() and language_of(p) == "cpp"):
            source = read_source(path, str(path.relative_to(tree)))
            if not isinstance(source, SourceFile) or not _CANDIDATE.search(source.text):
                continue
            unit = CppUnit(source)
            vlas = _variable_arrays(unit)
            hidden = opt201.hidden_declaration(unit)
            del unit
            free_vlas += len(vlas)
            if not (vlas or hidden or "from_blob" in source.text):
                continue
            gated = analyse_text(source, rules, headers=setup)
            forced = _forced(source, rules, setup)
            if _answers(gated) != _answers(forced):
                differences += 1
                print(f"  gate differs: {source.rel}: gated {_answers(gated)} / every file {_answers(forced)}")
            if forced.headers.outcome is not HeaderOutcome.USED:
                failed += 1
                print(f"  {source.rel}: headers {forced.headers.outcome.value}: {forced.headers.detail}")
                continue
            files_with_headers += 1
            header_vlas += _count_with_headers(source, forced)
            findings += [f"  {source.rel}:{f.line} {f.code} {f.fix.tier.value if f.fix else f.verdict.value}: {f.reason}"
                         for f in forced.findings]
        print(f"{tree.name}: variable-length array declarations without headers {free_vlas}, with headers "
              f"{header_vlas} (in the {files_with_headers} files parsed with headers; {failed} fell back)")
        print("\n".join(findings) if findings else "  no OPT201/OPT202 finding with headers")
    print(f"gate differences: {differences}")
    return 1 if differences else 0


def _forced(source: SourceFile, rules: list[type[Rule]], setup: HeaderSetup):
    """The analysis with every rule asking for the headers, whatever the header-free parse found."""
    saved = {rule: rule.__dict__.get("needs_headers") for rule in rules}
    try:
        for rule in rules:
            rule.needs_headers = classmethod(lambda cls, unit, findings: True)
        return analyse_text(source, rules, headers=setup)
    finally:
        for rule, original in saved.items():
            if original is None:
                del rule.needs_headers
            else:
                rule.needs_headers = original


def _answers(analysis) -> list:
    return sorted((f.code, f.line, f.verdict.value, f.fix and f.fix.tier.value) for f in analysis.findings)


def _variable_arrays(unit: CppUnit) -> list[int]:
    return [n.start for n in unit.nodes if n.kind is CursorKind.VAR_DECL and n.type_kind is TypeKind.VARIABLEARRAY]


def _count_with_headers(source: SourceFile, analysis) -> int:
    """VARIABLEARRAY declarations in the file parsed with the flags the analysis used."""
    from optpatch.child_process import run_in_child

    flags = analysis.headers.flags
    return run_in_child(lambda: len(_variable_arrays(CppUnit(source, flags))), 600)


# -- acceptance (issue 30) ------------------------------------------------------------------------------------------


def acceptance(trees: list[Path], jobs: int, ruff: str, json_path: Path | None) -> int:
    import json

    rows, problems = [], 0
    print(f"{machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, optpatch {_commit()}, --jobs {jobs}")
    for tree in trees:
        load_before = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="optpatch-accept-") as scratch:
            free_cache, cache = Path(scratch) / "free", Path(scratch) / "cache"
            options = ("--jobs", str(jobs), "--no-cache", "--format", "json")
            free = _whole(tree, free_cache, *options, "--no-headers")
            first = _whole(tree, cache, *options)
            cold = _whole(tree, cache, *options)
        wall, cpu, _peak, _code, _out = timed([ruff, "check", "--select", "ALL", "--no-cache", "--quiet", str(tree)])
        same, changed = _same_findings(free["document"], cold["document"])
        same_first, changed_first = _same_findings(free["document"], first["document"])
        problems += not (same and same_first)
        runs = (("header_free", free), ("first", first), ("second", cold))
        row = {
            "tree": tree.name, "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1),
            "ruff_s": round(wall, 2), "ruff_cpu_s": round(cpu, 2),
            **{f"{label}_s": round(run["wall"], 2) for label, run in runs},
            **{f"{label}_cpu_s": round(run["cpu"], 2) for label, run in runs},
            "first_over_header_free": round(first["wall"] / free["wall"], 2),
            "first_over_header_free_cpu": round(first["cpu"] / free["cpu"], 2),
            "second_over_header_free": round(cold["wall"] / free["wall"], 2),
            "second_over_header_free_cpu": round(cold["cpu"] / free["cpu"], 2),
            "header_free_over_ruff": round(free["wall"] / wall, 2),
            "header_free_over_ruff_cpu": round(free["cpu"] / cpu, 2),
            "first_outcomes": _outcomes(first["document"]), "outcomes": _outcomes(cold["document"]),
            "missing": _missing(cold["document"]), "findings": len(cold["document"]["findings"]),
            "identical_where_headers_unused": same and same_first, "changed_by_headers": changed,
            "changed_in_first_run": changed_first,
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    _acceptance_table(rows)
    if json_path is not None:
        json_path.write_text(json.dumps({"machine": machine(), "commit": _commit(), "jobs": jobs, "rows": rows}, indent=2))
    return 1 if problems else 0


def _whole(tree: Path, cache: Path, *options: str) -> dict:
    import json

    command = [sys.executable, "-m", "optpatch", "check", str(tree), *options]
    wall, cpu, peak, code, output = timed(command, env=dict(os.environ, OPTPATCH_CACHE_DIR=str(cache)))
    if code not in (0, 1, 3):  # 3: some files could not be analysed (listed in the report's errors)
        raise SystemExit(f"`{' '.join(command)}` exited {code}")
    return {"wall": wall, "cpu": cpu, "peak": peak, "document": json.loads(output)}


def _outcomes(document: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in document["cpp_headers"]:
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return counts


def _missing(document: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in document["cpp_headers"]:
        if entry.get("missing"):
            counts[entry["missing"]] = counts.get(entry["missing"], 0) + 1
    return counts


def _same_findings(free: dict, cold: dict) -> tuple[bool, list[str]]:
    """(whether every file whose headers were not used has the same findings both ways, the files the headers
    changed). A finding is its place, rule, verdict and tier; a kept site's reason may name a missing header."""
    used = {e["path"] for e in cold["cpp_headers"] if e["outcome"] == "used"}

    def keyed(document: dict) -> dict[str, list]:
        found: dict[str, list] = {}
        for f in document["findings"]:
            found.setdefault(f["path"], []).append((f["line"], f["code"], f["verdict"], f.get("tier")))
        return {path: sorted(items) for path, items in found.items()}

    before, after = keyed(free), keyed(cold)
    differing = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    return all(p in used for p in differing), differing


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _acceptance_table(rows: list[dict]) -> None:
    header = ("tree", "load", "ruff", "header-free", "headers, first run", "headers, second run",
              "first / header-free", "second / header-free", "header-free / ruff", "parses with headers (first; second)",
              "same findings")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))

    def timing(row: dict, label: str) -> str:
        return f"{row[label + '_s']} s ({row[label + '_cpu_s']} s CPU)"

    def ratio(row: dict, label: str) -> str:
        return f"{row[label]}x wall, {row[label + '_cpu']}x CPU"

    for row in rows:
        outcomes = "; ".join(", ".join(f"{n} {k}" for k, n in sorted(row[key].items())) or "none"
                             for key in ("first_outcomes", "outcomes"))
        cells = (row["tree"], f"{row['load_before']}-{row['load_after']}", timing(row, "ruff"),
                 timing(row, "header_free"), timing(row, "first"), timing(row, "second"),
                 ratio(row, "first_over_header_free"), ratio(row, "second_over_header_free"),
                 ratio(row, "header_free_over_ruff"), outcomes, "yes" if row["identical_where_headers_unused"] else "NO")
        print("| " + " | ".join(str(c) for c in cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cost = commands.add_parser("budgets")
    cost.add_argument("trees", nargs="*", type=Path)
    cost.add_argument("--pre-commit", type=Path)
    cost.add_argument("--markdown", action="store_true")
    found = commands.add_parser("candidates")
    found.add_argument("trees", nargs="+", type=Path)
    accept = commands.add_parser("acceptance")
    accept.add_argument("trees", nargs="+", type=Path)
    accept.add_argument("--jobs", type=int, default=1)
    accept.add_argument("--ruff", default=str(Path(sys.executable).with_name("ruff")))
    accept.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.command == "budgets":
        budgets(args.trees, args.pre_commit, args.markdown)
        return 0
    if args.command == "acceptance":
        return acceptance(args.trees, args.jobs, args.ruff, args.json)
    return candidates(args.trees)


if __name__ == "__main__":
    sys.exit(main())
