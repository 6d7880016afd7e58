"""Mutated inputs at any scale: damaged copies of real files, each checked by the mutant oracle.

Picks files under PATH... (Python and C++/CUDA; by default only those some
rule would parse, since the others never reach a frontend; `--files rewrites`
only those optpatch rewrites as they are), damages each
pick (tests/mutants/mutations.py: truncation, lost or repeated tokens and
lines, stray and NUL bytes, line endings, a missing final newline,
indentation) and checks the engine on it (tests/mutants/oracle.py): nothing
raises, every refusal is a FileError with a reason and no internal error,
every rewrite parses and adds no clang error, and a second analysis of the
rewrite changes nothing.

    PYTHONPATH=src python benchmarks/mutate_inputs.py /tmp/trees/DeepSpeed /tmp/trees/apex --mutants 20000 --seed 1

Prints progress, then how the mutants ended and every broken promise; each
failing mutant is saved under --failures to reproduce it. Exits 1 on any.
"""

from __future__ import annotations

import argparse
import faulthandler
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from mutants.campaign import Tally, run_campaign  # noqa: E402
from mutants.oracle import POLICY  # noqa: E402
from optpatch.config import Settings  # noqa: E402
from optpatch.discovery import discover  # noqa: E402
from optpatch.passes import analyse_file  # noqa: E402
from optpatch.model import FileError  # noqa: E402
from optpatch.rule import load_rules  # noqa: E402
from optpatch.source import read_source  # noqa: E402


def originals(paths: list[Path], max_bytes: int, which: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of the files to mutate, named `tree/relative path`.

    `which`: "every" file, those some rule "parses", or those optpatch "rewrites"
    as they are (so that most mutants still hold a site to fix).
    """
    rules = load_rules()
    found = []
    for root in paths:
        root = root.resolve()
        for path, rel in discover(root).files:
            source = read_source(path, rel, max_bytes)
            if isinstance(source, FileError):
                continue
            if which == "parses" and not any(rule.wants(source) for rule in rules):
                continue
            if which == "rewrites" and analyse_file(source, rules, Settings(), POLICY).new is None:
                continue
            found.append((f"{root.name}/{rel}", source.raw))
    return found


def print_summary(tally: Tally, files: int, seconds: float) -> None:
    print(f"\n{tally.mutants} mutants of {files} files in {seconds:.0f} s; {len(tally.failures)} broken promises")
    print("\nhow the mutants ended")
    for kind, count in tally.outcomes.most_common():
        print(f"  {kind:<48} {count:>7}")
    print("\nmutations applied")
    for name, count in sorted(tally.mutations.items()):
        print(f"  {name:<48} {count:>7}")
    for failure in tally.failures:
        print("\n" + failure.describe())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="trees whose files are mutated (never modified)")
    parser.add_argument("--mutants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="the same seed and files give the same mutants")
    parser.add_argument("--max-bytes", type=int, default=256 * 1024, help="skip larger originals (libcst is slow on them)")
    parser.add_argument(
        "--files", choices=("parses", "rewrites", "every"), default="parses",
        help="which originals: those some rule parses (default), those optpatch rewrites, or every file",
    )
    parser.add_argument("--failures", type=Path, default=Path("mutant-failures"), help="where failing mutants are saved")
    args = parser.parse_args()
    faulthandler.enable()  # a native crash still names the Python frames; the mutant stays in the work directory
    files = originals(args.paths, args.max_bytes, args.files)
    if not files:
        parser.error("no Python or C++/CUDA file to mutate under the given paths")
    print(f"{len(files)} files to mutate", flush=True)
    started = time.perf_counter()

    def progress(tally: Tally) -> None:
        if tally.mutants % 500 == 0:
            elapsed = time.perf_counter() - started
            print(f"  {tally.mutants} mutants, {len(tally.failures)} broken promises, {elapsed:.0f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="optpatch-mutants-") as workdir:
        tally = run_campaign(files, args.mutants, args.seed, Path(workdir), progress)
    print_summary(tally, len(files), time.perf_counter() - started)
    for failure in tally.failures:
        args.failures.mkdir(parents=True, exist_ok=True)
        (args.failures / f"seed{failure.seed}-{failure.index}-{Path(failure.original).name}").write_bytes(failure.mutant)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
