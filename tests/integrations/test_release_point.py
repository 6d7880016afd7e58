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
    for path in USER_DOCS:
        assert not REGISTRY_INSTALL.search(path.read_text()), f"{path}: optpatch is on no registry; install from a checkout"


# docs/releasing.md writes the pin as v0.N.M: the steps, not an example to copy.
PINNED_FILES = [path for path in USER_DOCS if path.name != "releasing.md"] + [REPO_ROOT / ".pre-commit-hooks.yaml", REPO_ROOT / "action.yml"]


def test_every_example_pins_the_current_version():
    """pre-commit's `rev:` and the Action's `@ref` are `v` and pyproject's version everywhere (docs/releasing.md)."""
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    pins = {path.name: re.findall(r"(?:\brev: |/optpatch@)([^\s`'\"]+)", path.read_text()) for path in PINNED_FILES}
    assert all(pin == f"v{version}" for found in pins.values() for pin in found), pins
    assert pins["README.md"] and pins["integrations.md"] and pins["optpatch-review.yml"] and pins[".pre-commit-hooks.yaml"]


def command_options() -> dict[str, set[str]]:
    """Every option of every `optpatch` command, as click parses them (aliases included)."""
    from optpatch.cli import main

    return {
        name: {opt for param in command.params for opt in (*param.opts, *param.secondary_opts) if opt.startswith("-")}
        for name, command in main.commands.items()
    }


def test_the_docs_name_only_options_that_exist():
    options = command_options()
    used = re.compile(r"\boptpatch (" + "|".join(options) + r")\b([^`\n|;&#)]*)")
    named = 0
    for path in [*USER_DOCS, REPO_ROOT / ".pre-commit-hooks.yaml", REPO_ROOT / "Makefile"]:
        for command, rest in used.findall(path.read_text()):
            unquoted = re.sub(r"\"[^\"]*\"|'[^']*'", "", rest)  # a quoted command is another program's
            for option in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", unquoted):
                named += 1
                assert option in options[command], f"{path.name}: `optpatch {command} ... {option}`: no such option"
    assert named > 50  # the pattern still finds the docs' commands
