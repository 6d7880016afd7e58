"""The example GitHub workflow keeps a fork's code away from write permissions."""

import re

import yaml

from conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "github-workflow"


def load(name: str) -> dict:
    document = yaml.safe_load((EXAMPLE / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as true
    return document


def steps(document: dict) -> list[dict]:
    return [step for job in document["jobs"].values() for step in job["steps"]]


def test_the_pull_request_job_is_read_only_and_runs_optpatch():
    analysis = load("optpatch.yml")
    assert set(analysis["on"]) == {"pull_request"}
    assert analysis["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in analysis["jobs"].values())
    scripts = "\n".join(step.get("run", "") for step in steps(analysis))
    assert "--format markdown" in scripts and "model_patch.diff" in scripts and "--format github-annotations" in scripts
    uploads = [step for step in steps(analysis) if step.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["with"]["path"] == "optpatch-report/"


def test_the_privileged_job_never_checks_out_or_interpolates_untrusted_text():
    comment = load("optpatch-comment.yml")
    analysis = load("optpatch.yml")
    assert comment["on"]["workflow_run"]["workflows"] == [analysis["name"]]
    assert comment["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert not any(step.get("uses", "").startswith("actions/checkout") for step in steps(comment))
    for step in steps(comment):
        # No ${{ }} expression in a script: values reach it through env or files, never as shell text.
        expressions = re.findall(r"\$\{\{(.*?)\}\}", step.get("run", ""))
        assert expressions == [], expressions
    assert "-F body=@optpatch-report/comment.md" in steps(comment)[-1]["run"]
