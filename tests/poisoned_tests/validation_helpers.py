"""Helpers for the validation tests: the CLI with the test's Python first on PATH, snapshots, process state."""

import os
import subprocess
import sys
import time
from pathlib import Path


def optpatch(*args, wait: bool = True, **env):
    """Run `python -m optpatch ARGS`; `python` inside validation commands is this interpreter."""
    environment = dict(os.environ, **env)
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    command = [sys.executable, "-m", "optpatch", *map(str, args)]
    if not wait:
        return subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() or p.is_symlink()}


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an unreaped child counts as stopped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def stops(pid: int, within_s: float = 10.0) -> bool:
    """Whether PID stops within a few seconds: a killed process needs a moment to be torn down."""
    deadline = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
