"""Small git repositories for the bench tests: a site optpatch fixes, or none."""

from __future__ import annotations

import subprocess
from pathlib import Path

OPT101_SITE = "import torch\n\n\ndef make(n):\n    buffer = torch.zeros(n)\n    buffer.fill_(1.0)\n    return buffer\n"
OPT102_SITE = "import torch\n\n\ndef positions(n):\n    return torch.arange(n).cuda()\n"
NO_SITE = "def make(n):\n    return [0] * n\n"


def git_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    identity = ["-c", "user.name=optpatch", "-c", "user.email=optpatch@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", *identity, "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *identity, "commit", "-q", "-m", "fixture"], cwd=root, check=True)
    return root
