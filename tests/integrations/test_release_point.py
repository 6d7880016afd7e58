"""The release point (CHANGELOG.md, pyproject.toml, optpatch.__version__) and the references the docs give to it."""

import re
import subprocess
import tomllib

import pytest
import yaml

from conftest import REPO_ROOT

import optpatch

USER_DOCS = [REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
             *sorted((REPO_ROOT / "examples" / "github-workflow").iterdir())]
# Installs that cannot work: optpatch is on no package registry.
REGISTRY_INSTALL = re.compile(r"pip install\s+[\"']?optpatch(\[[\w,]+\])?(==[\w.]+)?[\"']?(\s|$)")


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)


def test_changelog_pyproject_and_package_agree_on_the_version():
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()
    newest = re.findall(r"^## (\d+\.\d+\.\d+)", changelog, re.M)[0]
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert newest == project == optpatch.__version__
    assert "## Unreleased" in changelog.split(f"## {newest}")[0]


def test_the_hooks_run_serially():
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [hook["id"] for hook in hooks] == ["optpatch-check", "optpatch-fix"]
    assert all(hook["require_serial"] is True for hook in hooks)


def test_no_doc_names_an_install_that_cannot_work():
    tags = set(git("tag", "--list").stdout.split())
    for path in USER_DOCS:
        text = path.read_text()
        assert not REGISTRY_INSTALL.search(text), f"{path}: optpatch is on no registry; install from a checkout"
        for tag in re.findall(r"(?:rev: |optpatch@)(v\d[\w.]*)", text):
            assert tag in tags, f"{path}: names the tag {tag}, which does not exist; give a commit SHA"


def test_the_commit_the_docs_pin_holds_the_hooks_and_the_action():
    if git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: no history to find the pinned commit in")
    text = "\n".join(path.read_text() for path in USER_DOCS)
    pinned = set(re.findall(r"(?:rev: |optpatch@)([0-9a-f]{40})\b", text))
    assert pinned, "the docs give no example of pinning a commit SHA"
    for sha in pinned:
        hooks = git("show", f"{sha}:.pre-commit-hooks.yaml")
        assert hooks.returncode == 0, f"{sha} is not in this repository's history (rewritten?): pin another commit"
        assert "require_serial: true" in hooks.stdout
        assert "using: composite" in git("show", f"{sha}:action.yml").stdout
