"""`make new-rule` (python -m optpatch.dev new-rule): its output is a rule the whole house accepts as it is."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from optpatch.dev.scaffold import ScaffoldError, new_rule

# The tests that look at every rule: examples, fixtures (the new one's), docs, the rule API, the facts read from source.
SUITE = ["tests/test_rule_examples.py", "tests/test_fixtures.py::test_fixture[python/opt104/placeholder.py]",
         "tests/test_fixtures.py::test_fixture[cpp/opt204/placeholder.cpp]",
         "tests/test_fixtures.py::test_every_rule_has_fixtures",
         "tests/test_fixtures.py::test_every_rule_has_fixes_and_keeps_in_its_fixtures",
         "tests/architecture/test_rule_api.py",
         "tests/architecture/test_imports.py", "tests/integrations/test_rule_docs.py",
         "tests/test_scan_engine.py::test_rule_facts_read_from_source_match_the_imported_rules"]


def _checkout(tmp_path):
    """A copy of this checkout's files (tracked and new, not ignored): what a newcomer's clone holds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    root = tmp_path / "optpatch"
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


@pytest.mark.slow
def test_scaffolded_rules_pass_the_suite(tmp_path):
    # A Python rule and a C++ one in the same checkout: one run of the suite checks both (and that they coexist).
    root = _checkout(tmp_path)
    environment = {**os.environ, "PYTHONPATH": str(root / "src")}
    for code, name, language in (("OPT104", "rename-old-api", "python"), ("OPT204", "rename-old-api-cpp", "cpp")):
        made = subprocess.run([sys.executable, "-m", "optpatch.dev", "new-rule", code, name, "--language", language,
                               "--root", str(root)], capture_output=True, text=True, env=environment)
        assert made.returncode == 0, made.stderr
        assert f"created rules/{code.lower()}/rule.py" in made.stdout
    suite = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", *SUITE],
                           cwd=root, capture_output=True, text=True, env=environment, timeout=900)
    assert suite.returncode == 0, suite.stdout[-3000:]
    passed = re.search(r"(\d+) passed", suite.stdout)
    assert passed and int(passed.group(1)) > 100, suite.stdout[-500:]  # every rule's examples and checks ran
    listed = subprocess.run([sys.executable, "-m", "optpatch", "rules"], cwd=root, capture_output=True, text=True,
                            env=environment)
    assert "OPT104" in listed.stdout and "rename-old-api" in listed.stdout
    assert "OPT204" in listed.stdout and "rename-old-api-cpp" in listed.stdout
    # The C++ placeholder on a file of a user's: the host call renamed, the one in the macro kept.
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "ops.cpp").write_text((root / "tests/fixtures/cpp/opt204/placeholder.cpp").read_text())
    checked = subprocess.run([sys.executable, "-m", "optpatch", "check", str(tmp_path / "user"), "--select", "OPT204",
                              "--no-cache", "--no-headers"], capture_output=True, text=True, env=environment)
    assert checked.returncode == 1 and "ops.cpp:10" in checked.stdout, checked.stdout + checked.stderr


def test_the_scaffold_refuses_a_taken_code_or_a_bad_name(tmp_path):
    (tmp_path / "rules" / "opt101").mkdir(parents=True)
    with pytest.raises(ScaffoldError, match="exists already"):
        new_rule(tmp_path, "OPT101", "again")
    with pytest.raises(ScaffoldError, match="three digits"):
        new_rule(tmp_path, "OPT14", "short")
    with pytest.raises(ScaffoldError, match="hyphens"):
        new_rule(tmp_path, "OPT104", "Not_A_Name")
    with pytest.raises(ScaffoldError, match="no rules/ folder"):
        new_rule(tmp_path / "elsewhere", "OPT104", "name")
    with pytest.raises(ScaffoldError, match="not one of: python, cpp"):
        new_rule(tmp_path, "OPT104", "name", "rust")
    (tmp_path / "tests" / "fixtures" / "cpp" / "opt105").mkdir(parents=True)
    with pytest.raises(ScaffoldError, match="tests/fixtures/cpp/opt105 exists already"):
        new_rule(tmp_path, "OPT105", "taken-in-cpp")  # a code is one rule's, whatever its language
