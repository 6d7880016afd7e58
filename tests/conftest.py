import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures"

# `import torch` warns without numpy's C API in some builds; tests never need that noise.
os.environ.setdefault("PYTHONWARNINGS", "ignore::UserWarning")
# The result cache lives outside scanned trees (src/optpatch/cache.py); tests keep theirs out of $HOME.
os.environ.setdefault("OPTPATCH_CACHE_DIR", tempfile.mkdtemp(prefix="optpatch-test-cache-"))
# C++/CUDA files are analysed without their headers unless a test asks for them (the `with_headers` fixture):
# a parse with torch's and CUDA's headers costs seconds a run, and only the header-mode tests are about it.
os.environ.setdefault("OPTPATCH_NO_HEADERS", "1")


@pytest.fixture
def with_headers(monkeypatch):
    """Runs of optpatch in this test read C++/CUDA headers, as they do by default outside the tests."""
    monkeypatch.delenv("OPTPATCH_NO_HEADERS", raising=False)


def run_cli(*args: str, cwd: Path | None = None):
    """Run the real console entry point in a subprocess: exit codes and streams as a user sees them."""
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "optpatch", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def run_cli_hooked(hook: str, *args: str):
    """`python -m optpatch ARGS` with the Python code HOOK run first in the same process.

    A hook wraps one function (of the standard library or of optpatch) so that
    an interrupt, an edit or an error arrives at an exact step of a run rather
    than at a moment chosen by a timer.
    """
    import subprocess

    program = f"{hook}\nimport sys\nfrom optpatch.cli import main\nsys.argv[0] = 'optpatch'\nmain()\n"
    return subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def cli():
    return run_cli
