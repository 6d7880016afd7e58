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
