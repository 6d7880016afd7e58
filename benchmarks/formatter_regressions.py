"""Formatter-check regressions on patched files: does each file optpatch patches still pass its project's formatter?

For each repository: run optpatch (`apply`, default tier) with this checkout's
code and, optionally, with a baseline checkout's; for every patched Python
file, run the formatter the repository pins in its pre-commit config, at
that version, on the file before and after the patch (each in a scratch
copy holding the repository's configuration files). A regression is a file
that passed before and fails after. Prints one table row per repository and
code:

    python benchmarks/formatter_regressions.py --field /work/field \\
        [--baseline-src /tmp/base/src] [--tools /tmp/formatter-tools]

The formatters (black, ruff, yapf, usort at the pinned versions) are
installed on first use with `pip install --target` under --tools. Nothing
is written into the repositories: they are read, and copied in part.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG_FILES = ("pyproject.toml", "ruff.toml", ".ruff.toml", ".style.yapf", "setup.cfg", ".isort.cfg")


@dataclass(frozen=True)
class Check:
    """One formatter check as the repository's pre-commit config runs it."""

    packages: tuple[str, ...]  # pip requirements, pinned as the repository pins them
    commands: tuple[tuple[str, ...], ...]  # each run with the file's path appended; all must pass
    files: tuple[str, ...] = ("",)  # the path prefixes the hook's `files` limits it to
    exclude: str = ""


# The formatter each field repository pins in .pre-commit-config.yaml (diffusers: in setup.py's `quality` extra).
CHECKS = {
    "DeepSpeed": Check(("yapf==0.40.0",), (("yapf", "--diff"),)),
    "Megatron-LM": Check(("black==26.3.0",), (("black", "--check", "-q", "--skip-magic-trailing-comma",
                                                "--skip-string-normalization"),), files=("megatron/core/", "tests/unit_tests/")),
    "NeMo": Check(("black==24.3.0",), (("black", "--check", "-q"),)),
    "ao": Check(("ruff==0.11.6",), (("ruff", "format", "--check", "-q", "--force-exclude"),)),
    "apex": Check(("ruff==0.15.14",), (("ruff", "format", "--check", "-q", "--force-exclude"),), exclude="examples"),
    "diffusers": Check(("ruff==0.9.10",), (("ruff", "format", "--check", "-q"),)),
    "torchtune": Check(("black==22.12.0", "usort==1.0.5"), (("black", "--check", "-q"), ("usort", "check"))),
    "xformers": Check(("black==26.3.1", "usort==1.0.8.post1"), (("black", "--check", "-q"), ("usort", "check"))),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--field", type=Path, default=Path("/work/field"))
    parser.add_argument("--baseline-src", type=Path, help="the src/ of a checkout to compare with (its rules/ beside it)")
    parser.add_argument("--tools", type=Path, default=Path(tempfile.gettempdir()) / "optpatch-formatter-tools")
    parser.add_argument("--only", nargs="*", help="repositories to check (default: all of CHECKS found under --field)")
    args = parser.parse_args()
    codes = [("this checkout", ROOT / "src")]
    if args.baseline_src:
        codes.insert(0, ("baseline", args.baseline_src))
    print(f"| repository | formatter | code | patched .py files | in the hook's files | passed before | regressions |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, check in CHECKS.items():
        repo = args.field / name
        if not repo.is_dir() or (args.only and name not in args.only):
            continue
        environment = _tools(args.tools, check.packages)
        for label, src in codes:
            patched = _patched_files(repo, src)
            row = _regressions(repo, check, environment, patched)
            print(f"| {name} | {' + '.join(check.packages)} | {label} | {len(patched)} | {row[0]} | {row[1]} | "
                  f"{row[2]}{' (' + ', '.join(row[3]) + ')' if row[3] else ''} |", flush=True)
    return 0


def _tools(directory: Path, packages: tuple[str, ...]) -> dict[str, str]:
    """An environment whose PATH and PYTHONPATH hold these pinned packages (installed once, by pip)."""
    paths, bins = [], []
    for package in packages:
        target = directory / package.replace("==", "-")
        if not target.is_dir():
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target), package], check=True)
        paths.append(str(target))
        bins.append(str(target / "bin"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PATH": os.pathsep.join(bins + [os.environ["PATH"]])}


def _patched_files(repo: Path, src: Path) -> dict[str, tuple[bytes, bytes]]:
    """rel -> (bytes before, bytes after) of every Python file optpatch's patch changes, with the code in `src`."""
    with tempfile.TemporaryDirectory() as scratch:
        patch = Path(scratch) / "model_patch.diff"
        environment = {**os.environ, "PYTHONPATH": str(src), "OPTPATCH_CACHE_DIR": str(Path(scratch) / "cache")}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "optpatch", "apply", str(repo), "-o", str(patch), "-q"],
                       env=environment, check=False, capture_output=True)
        print(f"<!-- optpatch ({src}) on {repo.name}: {time.perf_counter() - started:.1f} s -->", file=sys.stderr)
        files = [line[6:].strip() for line in patch.read_text().splitlines() if line.startswith("+++ b/")]
        files = [rel for rel in files if rel.endswith(".py")]
        copy = Path(scratch) / "copy"
        copy.mkdir()
        for rel in files:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo / rel, copy / rel)
        subprocess.run(["git", "apply", str(patch)], cwd=copy, check=True)
        return {rel: ((repo / rel).read_bytes(), (copy / rel).read_bytes()) for rel in files}


def _regressions(repo: Path, check: Check, environment: dict, patched: dict[str, tuple[bytes, bytes]]):
    """(files the hook takes, of them passing before, of those failing after, the failing paths)."""
    taken = [rel for rel in patched if rel.startswith(check.files) and not (check.exclude and check.exclude in rel)]
    passed_before, regressions = 0, []
    for rel in sorted(taken):
        before, after = patched[rel]
        if not _passes(repo, check, environment, rel, before):
            continue
        passed_before += 1
        if not _passes(repo, check, environment, rel, after):
            regressions.append(rel)
    return len(taken), passed_before, len(regressions), regressions


def _passes(repo: Path, check: Check, environment: dict, rel: str, data: bytes) -> bool:
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch)
        (copy / ".git").mkdir()  # black's project root, as in the repository
        for name in CONFIG_FILES:
            if (repo / name).is_file():
                shutil.copyfile(repo / name, copy / name)
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes(data)
        return all(
            subprocess.run([*command, rel], cwd=copy, env=environment, capture_output=True).returncode == 0
            for command in check.commands
        )


if __name__ == "__main__":
    sys.exit(main())
