"""--format-command: the user's formatter, run only when asked, in a copy, and only on what optpatch changed."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from formatters import Check, ruff

CLEAN = '''\
import torch


def ranked(n, device: torch.device):
    order = sorted(torch.arange(n).to(device).tolist(), key=lambda v: -v)
    return order
'''
# Not as ruff writes it (`x=1`): ruff would change more than optpatch's edit.
UNCLEAN = '''\
import torch
x=1


def ranked(n, device: torch.device):
    order = sorted(torch.arange(n).to(device).tolist(), key=lambda v: -v)
    return order
'''


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.ruff]\nline-length = 76\n\n[tool.ruff.format]\n")
    (root / "clean.py").write_text(CLEAN)
    (root / "unclean.py").write_text(UNCLEAN)
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _patched(root: Path, patch: Path, where: Path) -> Path:
    copy = where / "patched"
    shutil.copytree(root, copy)
    subprocess.run(["git", "apply", str(patch)], cwd=copy, check=True)
    return copy


def test_the_formatter_shapes_what_optpatch_cannot(project, tmp_path):
    check = Check("ruff 0.12")
    assert check.passes(project / "clean.py")
    plain = tmp_path / "plain.diff"
    assert run_cli("apply", str(project), "-o", str(plain), "--no-cache").returncode == 0
    # A lambda is outside what optpatch lays out itself: its own edit keeps the line limit, not ruff's layout.
    assert not check.passes(_patched(project, plain, tmp_path / "a") / "clean.py")
    before = _snapshot(project)
    formatted = tmp_path / "formatted.diff"
    command = shlex.join([str(ruff("0.12")), "format", "--no-cache"])
    result = run_cli("apply", str(project), "-o", str(formatted), "--no-cache", "--format-command", command)
    assert result.returncode == 0, result.stderr
    assert _snapshot(project) == before, "the command ran in REPO"
    patched = _patched(project, formatted, tmp_path / "b")
    assert check.passes(patched / "clean.py")
    assert "device=device" in (patched / "clean.py").read_text()


def test_a_file_the_formatter_would_change_anyway_keeps_optpatchs_edit(project, tmp_path):
    patch = tmp_path / "formatted.diff"
    command = shlex.join([str(ruff("0.12")), "format", "--no-cache"])
    result = run_cli("apply", str(project), "-o", str(patch), "--no-cache", "--format-command", command)
    assert result.returncode == 0, result.stderr
    assert "unclean.py" in result.stderr and "would reformat" in result.stderr
    unclean = (_patched(project, patch, tmp_path) / "unclean.py").read_text()
    assert "x=1" in unclean and "device=device" in unclean


def test_a_failing_command_leaves_optpatchs_edits(project, tmp_path):
    plain, failed = tmp_path / "plain.diff", tmp_path / "failed.diff"
    assert run_cli("apply", str(project), "-o", str(plain), "--no-cache").returncode == 0
    result = run_cli("apply", str(project), "-o", str(failed), "--no-cache", "--format-command", "false")
    assert result.returncode == 0
    assert "--format-command" in result.stderr and "exited with status 1" in result.stderr
    assert failed.read_bytes() == plain.read_bytes()


def test_the_repositorys_format_command_needs_trust(project, tmp_path):
    marker = tmp_path / "ran"
    command = shlex.join([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    (project / "pyproject.toml").write_text(
        f"[tool.ruff]\nline-length = 76\n\n[tool.ruff.format]\n\n[tool.optpatch]\nformat-command = {json.dumps(command)}\n")
    refused = run_cli("apply", str(project), "-o", str(tmp_path / "p.diff"), "--no-cache")
    assert refused.returncode == 0  # inert, with a note: never an error for a run that does not use it
    assert "--trust-config" in refused.stderr and not marker.exists()
    trusted = run_cli("apply", str(project), "-o", str(tmp_path / "p.diff"), "--no-cache", "--trust-config")
    assert trusted.returncode == 0, trusted.stderr
    assert marker.exists()
