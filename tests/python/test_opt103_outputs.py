"""OPT103 through every output and `--validate`, as the rule files alone make it: no special case anywhere.

A small tree holds one finding of each verdict (a safe fix, a validate fix, a
keep with a category of this rule, advice). The real command line reports them
in text, JSON, SARIF, markdown and GitHub annotations, prints the manual, and a
`--validate` run applies the validate-tier fix once its command passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optpatch.rule import DOC_SECTIONS

ROOT = Path(__file__).resolve().parents[2]
RUNNER = '''\
import numpy as np
import torch


def step(ids: list[int], buf: torch.Tensor):
    t = torch.tensor(ids).cuda()
    buf.copy_(t)


def batch(ids: list[int]):
    return torch.tensor(ids).cuda()


def side(ids: list[int], s):
    t = torch.tensor(ids).cuda()
    with torch.cuda.stream(s):
        return t * 2


def host(a: np.ndarray):
    return torch.from_numpy(a).cuda(non_blocking=True) + 1
'''
SAFE, VALIDATE, KEPT, ADVICE = (6, 9), (11, 12), (15, 9), (21, 12)


def optpatch(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "optpatch", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("opt103_outputs")
    (root / "pkg").mkdir()
    (root / "pkg" / "runner.py").write_text(RUNNER)
    return root


def _report(tree: Path, output_format: str) -> str:
    result = optpatch("check", tree, "--no-cache", "--select", "OPT103", "--format", output_format)
    assert result.returncode == 1, result.stderr
    return result.stdout


def test_json_carries_every_verdict_with_its_typed_fields(tree):
    findings = {(f["line"], f["column"]): f for f in json.loads(_report(tree, "json"))["findings"]}
    assert {key: (f["verdict"], f["tier"], f["keep_category"], f["accepted"]) for key, f in findings.items()} == {
        SAFE: ("fix", "safe", None, True),
        VALIDATE: ("fix", "validate", None, False),
        KEPT: ("keep", None, "another stream", False),
        ADVICE: ("advice", None, None, False),
    }
    assert all(f["code"] == "OPT103" and f["name"] == "pinned-async-h2d" for f in findings.values())
    assert findings[SAFE]["replacement"] == "torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)"
    assert findings[SAFE]["impact"] == "high" and "docs/benchmarks.md" in findings[SAFE]["impact_basis"]


def test_sarif_lists_the_rule_with_its_manual_and_the_fix_with_its_replacements(tree):
    run = json.loads(_report(tree, "sarif"))["runs"][0]
    rule = next(rule for rule in run["tool"]["driver"]["rules"] if rule["id"] == "OPT103")
    assert rule["name"] == "pinned-async-h2d" and "## Fix safety" in rule["help"]["markdown"]
    results = {(r["locations"][0]["physicalLocation"]["region"]["startLine"]): r for r in run["results"]}
    assert results[SAFE[0]]["ruleId"] == "OPT103" and results[SAFE[0]]["fixes"]
    inserted = {rep["insertedContent"]["text"] for fix in results[SAFE[0]]["fixes"]
                for change in fix["artifactChanges"] for rep in change["replacements"]}
    assert inserted == {", pin_memory=True", "non_blocking=True"}


@pytest.mark.parametrize("output_format", ["markdown", "github", "github-annotations", "text"])
def test_the_other_formats_name_the_rule_at_each_site(tree, output_format):
    text = _report(tree, output_format)
    assert "OPT103" in text
    assert "pkg/runner.py:6" in text or "file=pkg/runner.py,line=6" in text


def test_rules_prints_the_manual():
    result = optpatch("rules", "OPT103")
    assert result.returncode == 0, result.stderr
    for section in DOC_SECTIONS:
        assert section in result.stdout
    assert "OPT103" in optpatch("rules").stdout


def test_a_validation_run_applies_the_validate_tier_fix(tree, tmp_path):
    patch = tmp_path / "model_patch.diff"
    command = f"{sys.executable} -c 'import torch, pkg.runner'"  # a stand-in suite: CUDA code cannot run here
    result = optpatch("apply", tree, "-o", patch, "--select", "OPT103", "--validate", command)
    assert result.returncode == 0, result.stdout + result.stderr
    added = [line for line in patch.read_text().splitlines() if line.startswith("+ ")]
    assert added == ["+    t = torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)",
                     "+    return torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)"]
    assert "passed OPT103 pkg/runner.py:11:" in result.stdout
