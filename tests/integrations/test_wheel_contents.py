"""The wheel carries what an installed optpatch needs beyond its modules: the rules, the bundled kernels, its data files.

Builds the wheel as pip would (build isolation: needs PyPI or a wheel cache),
unpacks it, and asks the unpacked package where its rules and kernels are.
"""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.slow


def test_an_installed_optpatch_finds_its_rules_and_kernels(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(REPO_ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    if built.returncode != 0 and "Could not find a version" in built.stderr + built.stdout:
        pytest.skip("no PyPI or wheel cache for the build backend")
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("optpatch-*.whl")
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    asked = subprocess.run(
        [sys.executable, "-c",
         "from optpatch.validation.kernels import default_kernels_dir\n"
         "from optpatch.rule import builtin_rules_dir\n"
         "from optpatch.analysis.out_ops import out_ops\n"
         "print(default_kernels_dir()); print(builtin_rules_dir()); print(len(out_ops()))"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site")}, capture_output=True, text=True, timeout=60,
    )
    assert asked.returncode == 0, asked.stderr
    kernels_line, rules_line, out_ops_count = asked.stdout.split()
    kernels, rules = Path(kernels_line), Path(rules_line)
    assert int(out_ops_count) > 400  # analysis/out_ops.json: the `out=` operators from torch's schemas
    assert kernels.is_relative_to(tmp_path / "site") and (kernels / "csrc").is_dir() and (kernels / "harness.py").is_file()
    assert (kernels / "targets.json").is_file()  # the acceptance targets `optpatch validate` reports
    assert rules.is_relative_to(tmp_path / "site") and (rules / "opt101" / "rule.py").is_file()
