"""The outline on real trees: the same findings as parsing whole modules, and how much less libcst reads.

    PYTHONPATH=src python benchmarks/outline_check.py TREE... [--jobs 2] [--mutants N --seed S]

For each TREE, runs the engine twice without the cache, once as optpatch
runs (libcst parses outlines, python_outline.py) and once parsing every
module whole, both with `--unsafe-fixes` so that every fix is planned, and
compares every finding (position, verdict, tier, reason, edits), the
rewritten files and the errors. Also counts, over the Python files libcst
parses, the characters other than whitespace in the files and in their
outlines. With `--mutants N`, also damages N copies of those files the
way the mutant campaign does (tests/mutants/mutations.py: lost and
repeated tokens and lines, stray bytes, line endings, indentation) and
compares each one's analysis with and without the outline. Prints one
table; exits 1 if anything differs. Nothing here is a test: the trees are
public checkouts, never committed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from optpatch import engine
from optpatch.config import Settings
from optpatch.discovery import discover
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules
from optpatch.source import SourceFile, read_source

from mutants.mutations import mutate  # noqa: E402

OUTLINE = engine._outline


def scan(tree: Path, outlined: bool, jobs: int):
    engine._outline = OUTLINE if outlined else (lambda rules, calls, source: None)
    started = time.perf_counter()
    result = engine.run(tree, Settings(), FixPolicy(unsafe_fixes=True), jobs=jobs, use_cache=False)
    seconds = time.perf_counter() - started
    findings = [(f.path, f.line, f.col, f.code, f.verdict, f.fix, f.reason, decision) for f, decision in result.decided]
    return findings, result.changes, [(e.path, e.line, e.reason) for e in result.errors], seconds


def parsed_characters(tree: Path, parsed: list[SourceFile]) -> tuple[int, int, int, int]:
    """(files parsed, files outlined, characters of those files, characters libcst reads), whitespace left out.

    Adds the files libcst parses to `parsed`.
    """
    rules = [rule for rule in load_rules() if rule.language == "python"]
    files = outlined = whole = kept = 0
    for path, rel in discover(tree, Settings().exclude).files:
        source = read_source(path, rel, Settings().max_file_size)
        if getattr(source, "language", None) != "python":
            continue
        wanted, calls = engine._screened([rule for rule in rules if rule.wants(source)], source)
        if not wanted:
            continue
        text = OUTLINE(wanted, calls, source)
        parsed.append(source)
        files += 1
        outlined += text is not None
        whole += len("".join(source.text.split()))
        kept += len("".join((text or source.text).split()))
    return files, outlined, whole, kept


def mutants(sources: list[SourceFile], count: int, seed: int) -> tuple[int, int, int]:
    """(mutants analysed, of them outlined, of them different with and without the outline)."""
    rng = random.Random(seed)
    rules = [rule for rule in load_rules() if rule.language == "python"]
    done = outlined = differ = 0
    scratch = Path(tempfile.mkdtemp(prefix="optpatch-outline-mutants-"))
    for _ in range(count):
        original = rng.choice(sources)
        data, how = mutate(original.raw, rng)
        path = scratch / "mutant.py"
        path.write_bytes(data)
        source = read_source(path, original.rel)
        if not isinstance(source, SourceFile):
            continue
        wanted, calls = engine._screened([rule for rule in rules if rule.wants(source)], source)
        if not wanted:
            continue
        done += 1
        outlined += OUTLINE(wanted, calls, source) is not None
        answers = []
        for outline in (OUTLINE, lambda rules, calls, source: None):
            engine._outline = outline
            result = analyse_file(source, rules, Settings(), FixPolicy(unsafe_fixes=True))
            answers.append(([(f.line, f.col, f.code, f.verdict, f.reason, f.fix) for f in result.findings], result.new,
                            result.error and result.error.reason))
        engine._outline = OUTLINE
        if answers[0] != answers[1]:
            differ += 1
            print(f"    differs: a mutant of {original.rel} ({', '.join(how)})", file=sys.stderr)
            (scratch / f"differs-{differ}.py").write_bytes(data)
    return done, outlined, differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--mutants", type=int, default=0, help="also compare this many damaged copies of the parsed files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| tree | Python files parsed | of them outlined | characters libcst reads | findings | same findings, patch and errors | outline | whole modules |")
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    differ = False
    parsed: list[SourceFile] = []
    for tree in args.trees:
        files, outlined, whole, kept = parsed_characters(tree, parsed)
        with_outline = scan(tree, True, args.jobs)
        without = scan(tree, False, args.jobs)
        same = with_outline[:3] == without[:3]
        differ |= not same
        print(f"| {tree.name} | {files} | {outlined} | {kept / max(whole, 1):.0%} | {len(without[0])} | "
              f"{'yes' if same else 'NO'} | {with_outline[3]:.2f} s | {without[3]:.2f} s |")
        if not same:
            for label, one, other in (("only with the outline", with_outline[0], without[0]), ("only whole", without[0], with_outline[0])):
                for finding in sorted(set(one) - set(other))[:5]:
                    print(f"    {label}: {finding[:7]}", file=sys.stderr)
    if args.mutants:
        done, outlined, different = mutants(parsed, args.mutants, args.seed)
        print(f"\n{done} mutants analysed (seed {args.seed}), {outlined} of them outlined: {different} with a different answer")
        differ |= different > 0
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
