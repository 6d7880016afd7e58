"""`mode: sarif`: the SARIF file github/codeql-action/upload-sarif takes, and the action's outputs."""

import json
import shutil

import jsonschema

from action_runs import run_action
from conftest import REPO_ROOT
from fake_github import FakeGitHub
from test_sarif_output import SCHEMA


def test_sarif_mode_writes_valid_sarif_without_kept_sites_and_sends_nothing(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(REPO_ROOT / "examples" / "minivllm", tree)
    with FakeGitHub() as fake:
        completed, outputs = run_action(tree, tmp_path, fake, "push", {}, tmp_path / "work", mode="sarif")
        assert fake.requests == []
    assert completed.returncode == 0, completed.stdout + completed.stderr
    document = json.loads(open(outputs["sarif"]).read())
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    results = document["runs"][0]["results"]
    verdicts = {r["properties"]["verdict"] for r in results}
    assert "keep" not in verdicts and document["runs"][0]["properties"]["summary"]["kept"] > 0
    fixes = [r for r in results if r["properties"]["verdict"] == "fix"]
    assert fixes and all(r["fixes"][0]["artifactChanges"][0]["replacements"] for r in fixes)
    counts = json.loads(outputs["counts"])
    assert sum(row["applied"] for row in counts["by_rule"].values()) == int(outputs["fixes"]) > 0
    assert sum(row["proposed"] for row in counts["by_tier"].values()) == int(outputs["proposals"]) > 0
    assert outputs["fail"] == "true"  # fail-on: fixable, the default

    _, quiet = run_action(tree, tmp_path, fake, "push", {}, tmp_path / "work2", mode="sarif", fail_on="none")
    assert quiet["fail"] == "false"
    wrong, _ = run_action(tree, tmp_path, fake, "push", {}, tmp_path / "work3", mode="sarif", fail_on="sometimes")
    assert wrong.returncode == 1 and "input `fail-on` is `sometimes`; expected fixable | none" in wrong.stdout
