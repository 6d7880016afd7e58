"""Small throwaway git repositories and sources with a known fix, for the integration tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

# One safe OPT101 fix on line 5: `out` is overwritten in full by copy_ before it is read.
FIXABLE = "import torch\n\n\ndef step(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"
FIXED = FIXABLE.replace("torch.zeros(", "torch.empty(")
# No site any rule handles.
CLEAN = "import torch\n\n\ndef step(x):\n    return x * 2\n"


def git(repo: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=optpatch tests", "-c", "user.email=tests@optpatch.invalid", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    )
    return completed.stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository at PATH with FILES committed on branch main."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    write_files(path, files)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, newline="")
