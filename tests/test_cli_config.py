"""Each file's own configuration, as ruff resolves it (issue 33, point 1), through the console script.

tests/fixtures/monorepo holds a root optpatch.toml that excludes
backends/hpu/, a services/api/pyproject.toml whose per-file-ignores are
relative to services/api, a src/optpatch.toml that ignores OPT101, and a
lib/pyproject.toml without [tool.optpatch] (passed over). Every Python file
in it has the same safe OPT101 fix.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli

MONOREPO = FIXTURES / "monorepo"
# What `check .` at the root decides for each file: True, the fix applies.
VERDICTS = {
    "train.py": True,
    "lib/lib/model.py": True,  # lib's pyproject.toml has no [tool.optpatch]: the root's settings
    "services/api/app/main.py": True,
    "services/api/legacy/old.py": False,  # per-file-ignores "legacy/*.py", relative to services/api
    "src/core.py": False,  # src/optpatch.toml ignores OPT101
    "backends/hpu/ops/tokens.py": False,  # the root's exclude
}


@pytest.fixture
def monorepo(tmp_path) -> Path:
    copy = tmp_path / "monorepo"
    shutil.copytree(MONOREPO, copy)
    (copy / ".git").mkdir()  # the repository's root, as a checkout has it
    return copy


def fixed_files(stdout: str) -> set[str]:
    return {finding["path"] for finding in json.loads(stdout)["findings"] if finding["accepted"]}


def test_a_walk_gives_each_file_its_nearest_configuration(monorepo):
    result = run_cli("check", ".", "--output-format", "json", "--no-cache", cwd=monorepo)
    assert result.returncode == 1, result.stderr
    assert fixed_files(result.stdout) == {rel for rel, fixed in VERDICTS.items() if fixed}
    assert "backends/hpu/ops/tokens.py" not in result.stdout


@pytest.mark.parametrize("rel", sorted(VERDICTS))
def test_a_file_gets_the_same_verdict_however_it_is_named(monorepo, rel):
    expected = 1 if VERDICTS[rel] else 0
    alone = run_cli("check", "--force-exclude", rel, "--no-cache", cwd=monorepo)  # as pre-commit names it
    assert alone.returncode == expected, alone.stdout + alone.stderr
    folder = monorepo / Path(rel).parent
    from_its_folder = run_cli("check", "--force-exclude", Path(rel).name, "--no-cache", cwd=folder)
    assert from_its_folder.returncode == expected, from_its_folder.stdout + from_its_folder.stderr


def test_files_named_together_keep_their_own_verdicts(monorepo):
    result = run_cli("check", "--force-exclude", *sorted(VERDICTS), "--output-format", "json", "--no-cache", cwd=monorepo)
    assert fixed_files(result.stdout) == {rel for rel, fixed in VERDICTS.items() if fixed}
    skipped = {entry["path"] for entry in json.loads(result.stdout)["skipped"]}
    assert skipped == {"backends/hpu/ops/tokens.py"}


def test_patterns_are_relative_to_the_folder_of_their_configuration(monorepo):
    api = monorepo / "services" / "api"
    result = run_cli("check", ".", "--output-format", "json", "--no-cache", cwd=api)
    assert result.returncode == 1
    assert fixed_files(result.stdout) == {"app/main.py"}
    from_the_root = run_cli("check", "services", "--output-format", "json", "--no-cache", cwd=monorepo)
    assert fixed_files(from_the_root.stdout) == {"services/api/app/main.py"}


def test_an_excluded_file_named_without_force_exclude_is_analysed(monorepo):
    result = run_cli("check", "backends/hpu/ops/tokens.py", "--no-cache", cwd=monorepo)
    assert result.returncode == 1  # ruff's rule: a file named on the command line is checked unless --force-exclude


def test_config_names_the_configuration_of_every_file(monorepo):
    result = run_cli("check", ".", "--config", "src/optpatch.toml", "--output-format", "json", "--no-cache", cwd=monorepo)
    assert result.returncode == 0 and fixed_files(result.stdout) == set()


def test_a_mistake_in_a_nested_configuration_stops_the_run(monorepo):
    (monorepo / "services" / "api" / "pyproject.toml").write_text("[tool.optpatch]\nbogus = 1\n")
    result = run_cli("check", ".", "--no-cache", cwd=monorepo)
    assert result.returncode == 2 and "unknown key `bogus`" in result.stderr


def test_a_files_settings_are_its_folders_without_a_look_at_the_disk(monorepo):
    # The engine asks `for_file` once per discovered file; it must answer what `for_path` does.
    from optpatch.config import ConfigResolver

    files = [path for path in monorepo.rglob("*.py")]
    assert len(files) >= len(VERDICTS)
    by_file, by_path = ConfigResolver(), ConfigResolver()
    assert [by_file.for_file(path) for path in files] == [by_path.for_path(path) for path in files]
