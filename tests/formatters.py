"""The real formatters that the shaping tests hold optpatch's edits to: black 24, ruff 0.11 and 0.12, clang-format.

black, ruff 0.12 and clang-format come with the `test` extra
(pyproject.toml). ruff 0.11 cannot share that environment with 0.12:
`make setup` installs it with `pip install --target` under
$VENV/formatters/ruff-0.11, and `ruff("0.11")` does the same on first use
when it is missing (the test is skipped, with the reason, only if pip cannot
reach PyPI).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FORMATTERS = Path(sys.prefix) / "formatters"
RUFF_PINS = {"0.11": "ruff>=0.11,<0.12", "0.12": "ruff>=0.12,<0.13"}


def _installed(name: str) -> Path:
    found = Path(sys.prefix) / "bin" / name
    if found.is_file():
        return found
    which = shutil.which(name)
    if which is None:
        pytest.fail(f"{name} is not installed: `pip install -e '.[test]'` (pyproject.toml's test extra) installs it")
    return Path(which)


def ruff(version: str) -> Path:
    """The `ruff` executable of this minor version."""
    executable = _installed("ruff")
    if _version(executable).startswith(version + "."):
        return executable
    target = FORMATTERS / f"ruff-{version}"
    executable = target / "bin" / "ruff"
    if not executable.is_file():
        install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                  "--target", str(target), RUFF_PINS[version]], capture_output=True, text=True)
        if install.returncode != 0:
            pytest.skip(f"ruff {version} is not installed and pip could not install it: {install.stderr[-300:]}")
    assert _version(executable).startswith(version + "."), _version(executable)
    return executable


def black() -> Path:
    executable = _installed("black")
    assert _version(executable).startswith("24."), _version(executable)
    return executable


def clang_format() -> Path:
    return _installed("clang-format")


def _version(executable: Path) -> str:
    return subprocess.run([str(executable), "--version"], capture_output=True, text=True, check=True).stdout.split()[1]


@dataclass(frozen=True)
class Check:
    """A formatter's check of one file, as a project runs it: `--check` with its own configuration and arguments."""

    name: str  # "black", "ruff 0.11", ...
    arguments: tuple[str, ...] = ()

    def command(self, path: Path) -> list[str]:
        if self.name == "black":
            return [str(black()), "--check", "-q", *self.arguments, str(path)]
        version = self.name.split()[1]
        return [str(ruff(version)), "format", "--check", "-q", "--no-cache", *self.arguments, str(path)]

    def passes(self, path: Path) -> bool:
        """Whether the formatter leaves `path` as it is (run in the file's directory, so it finds the configuration)."""
        return subprocess.run(self.command(path), cwd=path.parent, capture_output=True).returncode == 0

    def __str__(self) -> str:
        return " ".join((self.name, *self.arguments))
