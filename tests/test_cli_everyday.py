"""Everyday use through the console script (issue 33): large files, names users know, output to click and grep."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli

EXAMPLE = REPO_ROOT / "examples" / "minivllm"
FIXABLE = "import torch\n\n\ndef step(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"


@pytest.fixture
def example(tmp_path) -> Path:
    copy = tmp_path / "minivllm"
    shutil.copytree(EXAMPLE, copy)
    return copy


# -- large inputs (point 8) -------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_skipped_with_a_warning(tmp_path):
    (tmp_path / "optpatch.toml").write_text("max-file-size = 1000\n")
    (tmp_path / "generated.py").write_text("x = 1\n" * 400)
    (tmp_path / "model.py").write_text(FIXABLE)
    result = run_cli("check", ".", "--exit-zero", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning: generated.py: skipped: larger than max-file-size (2,400 > 1,000 bytes)" in result.stderr
    assert {"path": "generated.py", "reason": "larger than max-file-size (2,400 > 1,000 bytes)"} in json.loads(result.stdout)["skipped"]
    assert run_cli("check", ".", cwd=tmp_path).returncode == 1  # model.py's fix, not the skip
    assert run_cli("check", ".", "--exit-zero", "--strict", cwd=tmp_path).returncode == 3


# -- names users know (point 9) ---------------------------------------------------------------------


def test_rule_is_rules():
    one, other = run_cli("rule", "OPT101"), run_cli("rules", "OPT101")
    assert one.returncode == 0 and one.stdout == other.stdout and "Fix safety" in one.stdout


def test_select_all_is_every_rule(example):
    every = run_cli("check", str(example), "--select", "ALL", "--output-format", "json")
    default = run_cli("check", str(example), "--output-format", "json")
    assert every.returncode == 1, every.stderr
    assert json.loads(every.stdout)["findings"] == json.loads(default.stdout)["findings"]
    none = run_cli("check", str(example), "--select", "ALL", "--ignore", "OPT", "--output-format", "json")
    assert json.loads(none.stdout)["findings"] == []


@pytest.mark.parametrize("name", ["stubs.pyi", "notes.txt"])
def test_a_named_file_optpatch_does_not_read_gets_a_warning(tmp_path, name):
    (tmp_path / name).write_text(FIXABLE)
    result = run_cli("check", name, cwd=tmp_path)
    assert result.returncode == 0
    assert f"warning: {name}: skipped: not analysed: optpatch reads .py, .cc, " in result.stderr


# -- suggestions only for what is applied (point 4) --------------------------------------------------


def test_markdown_suggests_only_the_fixes_the_run_applies(example):
    result = run_cli("check", str(example), "--output-format", "markdown")
    body = result.stdout
    suggestions, _, proposals = body.partition("#### Suggestions")[2].partition("#### Proposed, not applied")
    assert suggestions.count("```suggestion") == 6  # the safe fixes whose edits lie on their own line
    assert "torch.rand(" not in suggestions  # unsafe: different random numbers
    assert "```suggestion" not in proposals.split("<details>")[0]
    assert ("`minivllm/sampler.py:45:16` `OPT102` create-on-device (unsafe tier): "
            "`torch.rand(num_reqs, self.vocab_size, device=device)`; unsafe tier: applied only with --unsafe-fixes") in proposals
    assert "validate tier: applied only after a passing --validate run" in proposals


def test_github_warns_only_for_the_fixes_the_run_applies(example):
    lines = run_cli("check", str(example), "--output-format", "github").stdout.splitlines()
    warnings = [line for line in lines if line.startswith("::warning")]
    assert len(warnings) == 11 and not any("sampler.py,line=45" in line for line in warnings)
    assert "minivllm/sampler.py:45:16: OPT102 create-on-device [unsafe, proposed]: unsafe tier: applied only with --unsafe-fixes" in lines


# -- output to click and grep (points 5 and 6) --------------------------------------------------------


def test_locations_are_relative_to_the_current_folder_and_explain_takes_them(example):
    concise = run_cli("check", ".", "--output-format", "concise", cwd=example.parent)
    first = concise.stdout.splitlines()[0]
    # fixes first, the highest impact first: the launcher's copy runs per step, as `ModelRunner.execute_model` calls
    # its binding (frequency.py); then the step method's arange
    assert first.startswith("minivllm/csrc/cache_ops.cu:43:7: OPT202 from-blob-async-copy [safe, fixable]"), first
    third = concise.stdout.splitlines()[2]  # after the launcher's second copy, at L45
    assert third.startswith("minivllm/minivllm/model_runner.py:52:16: OPT102 create-on-device [safe, fixable]"), third
    inside = run_cli("check", ".", "--output-format", "concise", cwd=example / "minivllm")
    location = next(line for line in inside.stdout.splitlines() if "create-on-device [unsafe" in line).split(": ")[0]
    assert location == "sampler.py:45:16"  # not minivllm/sampler.py: the file is clicked from the current folder
    explained = run_cli("explain", location, cwd=example / "minivllm")
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith("OPT102 create-on-device at sampler.py:45:16: proposed, tier unsafe")
    assert "OPT101" not in explained.stdout  # the column picks the one site
    elsewhere = run_cli("explain", location.replace(":16", ":17"), cwd=example / "minivllm")
    assert "No site examined at sampler.py:45:17" in elsewhere.stdout


def test_concise_is_a_short_line_per_finding_and_headers_are_never_wrapped(example):
    concise = run_cli("check", ".", "--output-format", "concise", cwd=example).stdout.splitlines()
    findings = concise[: concise.index("")]
    # Within 120 columns, or the quoted code is cut to its least (16 characters) beside a long header.
    assert len(findings) == 15 and all(len(line) <= 120 or len(line.rsplit(" ", 1)[-1]) <= 16 for line in findings)
    # The impact (with how often the site runs, and its size where the frequency or set-up code lowered it) takes
    # room: 5 fit.
    assert sum(len(line) <= 120 for line in findings) >= 5
    assert not any("proof:" in line for line in findings)
    full = run_cli("check", ".", cwd=example).stdout.splitlines()  # piped: 80 columns
    assert sum("OPT102 create-on-device [safe" in line for line in full) == 1
    headers = [line for line in full if " [safe, fixable]" in line or ", proposed]" in line]
    assert len(headers) == 15
    assert all(line.split(": ")[0].count(":") == 2 for line in headers)  # path:line:col on the header's own line


def test_fixes_come_first_and_show_filters(example):
    lines = run_cli("check", ".", "--output-format", "concise", cwd=example).stdout.splitlines()
    statuses = [line.split("[")[1].split("]")[0].split(", ")[-1] for line in lines if line.startswith(("csrc", "minivllm"))]
    assert statuses == ["fixable"] * 11 + ["proposed"] * 4
    only = run_cli("check", ".", "--output-format", "concise", "--show", "proposals", cwd=example).stdout
    assert only.count(", proposed]") == 4 and "fixable]" not in only


def test_statistics_lead_with_fixes_and_end_with_a_total(example):
    lines = run_cli("check", ".", "--statistics", cwd=example).stdout.splitlines()
    assert lines[0].split()[-1] == "fixable" and lines[-1] == "Total: 29 findings (11 fixable, 4 proposed (not applied), 14 kept)"


def test_the_summary_says_how_to_apply_and_counts_agree_with_their_nouns(tmp_path):
    (tmp_path / "model.py").write_text(FIXABLE)
    checked = run_cli("check", ".", cwd=tmp_path).stdout
    assert "1 file analysed" in checked and "--fix" in checked and "--diff > model_patch.diff" in checked
    fixed = run_cli("check", ".", "--fix", cwd=tmp_path)
    assert "Fixed 1 file." in fixed.stdout


def test_an_error_line_starts_with_the_path_and_a_syntax_error_has_its_column(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\n\ndef f(:\n    return torch.zeros(3)\n")
    result = run_cli("check", ".", cwd=tmp_path)
    assert result.returncode == 3
    assert "broken.py:3:7: error: syntax error: invalid syntax" in result.stdout, result.stdout


def test_sarif_uris_are_relative_to_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "services" / "api").mkdir(parents=True)
    (repo / "services" / "api" / "pyproject.toml").write_text("[project]\nname = 'api'\n")
    (repo / "services" / "api" / "model.py").write_text(FIXABLE)
    result = run_cli("check", "services/api", "--output-format", "sarif", cwd=repo)
    run = json.loads(result.stdout)["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == repo.resolve().as_uri() + "/"
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "services/api/model.py", "uriBaseId": "SRCROOT"}


# -- a project inside a repository ----------------------------------------------------------------


@pytest.mark.parametrize("where, named", [(".", "server/pkg/m.py"), ("server", "."), ("server/pkg", "m.py")])
def test_the_diff_of_a_project_inside_a_repository_applies_from_any_of_its_folders(tmp_path, where, named):
    """text-generation-inference keeps its Python package in `server/`, with its own pyproject.toml, which makes
    `server/` optpatch's root; `git apply` reads a patch's paths from the repository's top, wherever it runs (a
    patch relative to `server/` is refused at the top and skipped inside `server/`)."""
    import subprocess

    (tmp_path / "server" / "pkg").mkdir(parents=True)
    (tmp_path / "server" / "pyproject.toml").write_text("[project]\nname = 's'\n")
    (tmp_path / "server" / "pkg" / "m.py").write_text(FIXABLE)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "i"]):
        subprocess.run(git + command, cwd=tmp_path, check=True)
    checked = run_cli("check", named, "--diff", "--no-cache", cwd=tmp_path / where)
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.startswith("diff --git a/server/pkg/m.py b/server/pkg/m.py\n"), checked.stdout
    (tmp_path / "p.diff").write_text(checked.stdout)
    for folder in (tmp_path, tmp_path / "server" / "pkg"):
        applied = subprocess.run(["git", "apply", "--numstat", "--check", str(tmp_path / "p.diff")], cwd=folder,
                                 capture_output=True, text=True)
        assert applied.returncode == 0 and applied.stdout.split() == ["1", "1", "server/pkg/m.py"], applied
