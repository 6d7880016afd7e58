"""The GitHub Action's one step of logic: `python -m optpatch.integrations.action`, configured by environment variables.

action.yml passes each input as INPUT_<NAME> (never as shell text, so no
input can inject a command) and the working directory as OPTPATCH_WORKDIR;
GitHub Actions sets the GITHUB_* variables. What runs depends on the mode
and the event:

| mode | event | what it does | requests to GitHub |
|---|---|---|---|
| review | pull_request | run optpatch on the changed lines, write the review bundle | none |
| review | workflow_run | post the bundle's review (github_review.post) | reads; review writes |
| sarif | any | write SARIF for github/codeql-action/upload-sarif | none |
| patch-pr | any | apply the fixes, commit them on a branch, open or update the PR | reads; PR writes |

Results go to $GITHUB_OUTPUT: the patch, the JSON report and SARIF paths,
the counts of fixes and proposals, the counts by rule and tier (JSON), the
directory to upload as the artifact, and `fail` when `fail-on: fixable` and
a fix applies (action.yml fails the job after the artifact is uploaded).
"""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from optpatch.integrations import github_review, patch_pr
from optpatch.integrations.github_api import ACTIONS_BOT, ApiSetupError, repository

REVIEW_DIR = "review"


class Mode(enum.StrEnum):
    REVIEW = "review"
    SARIF = "sarif"
    PATCH_PR = "patch-pr"


class FailOn(enum.StrEnum):
    FIXABLE = "fixable"
    NONE = "none"


class ActionError(Exception):
    """A configuration the action cannot run with; the message says what to change."""


@dataclass(frozen=True)
class Inputs:
    mode: Mode
    path: str
    changed_since: str
    select: str
    ignore: str
    unsafe_fixes: bool
    validate: str
    fail_on: FailOn
    branch: str
    bot_login: str
    token: str

    @classmethod
    def from_env(cls, env: dict[str, str]) -> "Inputs":
        def value(name: str, default: str = "") -> str:
            return env.get(f"INPUT_{name}", "").strip() or default

        return cls(
            mode=choice(Mode, "mode", value("MODE")),
            path=value("PATH", "."),
            changed_since=value("CHANGED_SINCE"),
            select=value("SELECT"),
            ignore=value("IGNORE"),
            unsafe_fixes=choice(Flag, "unsafe-fixes", value("UNSAFE_FIXES", "false")) is Flag.TRUE,
            validate=value("VALIDATE"),
            fail_on=choice(FailOn, "fail-on", value("FAIL_ON", "fixable")),
            branch=value("BRANCH", "optpatch/fixes"),
            bot_login=value("BOT_LOGIN", ACTIONS_BOT),
            token=value("TOKEN"),
        )


class Flag(enum.StrEnum):
    TRUE = "true"
    FALSE = "false"


def choice(kind: type[enum.StrEnum], name: str, text: str):
    try:
        return kind(text)
    except ValueError:
        allowed = " | ".join(member.value for member in kind)
        raise ActionError(f"input `{name}` is `{text}`; expected {allowed}") from None


@dataclass(frozen=True)
class Workflow:
    """What GitHub Actions says about the run."""

    event_name: str
    event: dict
    repository: str
    workdir: Path
    output_file: Path | None
    run_url: str
    ref_name: str  # the branch the run is on: a patch pull request's base

    @classmethod
    def from_env(cls, env: dict[str, str]) -> "Workflow":
        event_path = env.get("GITHUB_EVENT_PATH")
        event = json.loads(Path(event_path).read_text(encoding="utf-8")) if event_path else {}
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        repository_name = env.get("GITHUB_REPOSITORY", "")
        output = env.get("GITHUB_OUTPUT")
        return cls(
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event=event,
            repository=repository_name,
            workdir=Path(env.get("OPTPATCH_WORKDIR") or Path(env.get("RUNNER_TEMP", ".")) / "optpatch"),
            output_file=Path(output) if output else None,
            run_url=f"{server}/{repository_name}/actions/runs/{env.get('GITHUB_RUN_ID', '')}",
            ref_name=env.get("GITHUB_REF_NAME", ""),
        )


def main(env: dict[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    try:
        inputs, workflow = Inputs.from_env(env), Workflow.from_env(env)
        workflow.workdir.mkdir(parents=True, exist_ok=True)
        outputs = run(inputs, workflow)
    except (ActionError, ApiSetupError, github_review.BundleError, patch_pr.GitError) as error:
        print(f"::error title=optpatch::{one_line(str(error))}")
        return 1
    write_outputs(workflow.output_file, outputs)
    return 0


def run(inputs: Inputs, workflow: Workflow) -> dict[str, str]:
    if inputs.mode is Mode.REVIEW and workflow.event_name == "workflow_run":
        return post_review(inputs, workflow)
    if inputs.mode is Mode.REVIEW:
        return prepare_review(inputs, workflow)
    if inputs.mode is Mode.SARIF:
        return sarif(inputs, workflow)
    return patch_pull_request(inputs, workflow)


def prepare_review(inputs: Inputs, workflow: Workflow) -> dict[str, str]:
    if workflow.event_name != "pull_request":
        raise ActionError(
            f"mode: review runs on `pull_request` (to analyse) and `workflow_run` (to post), not `{workflow.event_name}`"
        )
    pull = workflow.event["pull_request"]
    head = git_head()
    if head != pull["head"]["sha"]:
        raise ActionError(
            f"the checkout is {head}, not the pull request's head {pull['head']['sha']}: review comments sit on the head's "
            "lines, so check it out (actions/checkout with `ref: ${{ github.event.pull_request.head.sha }}`)"
        )
    base = inputs.changed_since or pull["base"]["sha"]
    report, outputs = run_optpatch(inputs, workflow, "json", ["--changed-since", base, "--changed-lines"])
    directory = workflow.workdir / REVIEW_DIR
    bundle = github_review.prepare(report, Path(report["root"]), pull["number"], head, Path(outputs["patch"]), directory)
    print(f"optpatch: {len(bundle.comments)} review comment(s) prepared for pull request #{bundle.pull_request} in {directory}")
    return {**outputs, "artifact-dir": str(directory)}


def post_review(inputs: Inputs, workflow: Workflow) -> dict[str, str]:
    run_event = workflow.event["workflow_run"]
    if run_event.get("event") != "pull_request":
        print(f"optpatch: the triggering run was for `{run_event.get('event')}`, not a pull request: nothing to post")
        return {}
    bundle = github_review.load_bundle(workflow.workdir / REVIEW_DIR)
    repo = repository(workflow.repository, inputs.token)
    outcome = github_review.post(bundle, repo, run_event["head_sha"], inputs.bot_login, run_event.get("html_url", ""))
    print(
        f"optpatch: review {outcome.review} on #{bundle.pull_request}: {outcome.posted} new comment(s), "
        f"{outcome.standing} still standing, {outcome.resolved} resolved, {outcome.outside_diff} outside the diff"
    )
    return {}


def sarif(inputs: Inputs, workflow: Workflow) -> dict[str, str]:
    # Code scanning compares each upload with the base branch's: a partial one would show the rest as fixed.
    scope = ["--changed-since", inputs.changed_since] if inputs.changed_since else []
    _, outputs = run_optpatch(inputs, workflow, "sarif", scope)
    return outputs


def patch_pull_request(inputs: Inputs, workflow: Workflow) -> dict[str, str]:
    scope = ["--changed-since", inputs.changed_since] if inputs.changed_since else []
    report, outputs = run_optpatch(inputs, workflow, "markdown", [*scope, "--write"])
    body = Path(outputs["body"]).read_text(encoding="utf-8")
    repo = repository(workflow.repository, inputs.token)
    root = Path(report["root"])
    base = workflow.ref_name or patch_pr.git(root, "rev-parse", "--abbrev-ref", "HEAD")
    outcome = patch_pr.publish(root, report, body, repo, base, inputs.branch, workflow.run_url)
    print(f"optpatch: pull request {outcome.action}" + (f" (#{outcome.pull_request})" if outcome.pull_request else ""))
    return {**outputs, "pull-request": str(outcome.pull_request or ""), "fail": "false"}


def run_optpatch(inputs: Inputs, workflow: Workflow, fmt: str, extra: list[str]) -> tuple[dict, dict[str, str]]:
    """`optpatch apply` with the inputs' options; the JSON report and the outputs, or ActionError on failure."""
    work = workflow.workdir
    patch, report_path = work / "model_patch.diff", work / "report.json"
    stdout_path = work / {"json": "report.json", "sarif": "optpatch.sarif", "markdown": "body.md"}[fmt]
    command = [sys.executable, "-m", "optpatch", "apply", inputs.path, "-o", str(patch), "--format", fmt, "-q", *extra]
    if fmt != "json":
        command += ["--json-output", str(report_path)]
    for option, value in (("--select", inputs.select), ("--ignore", inputs.ignore)):
        if value:
            command += [option, value]
    if inputs.unsafe_fixes:
        command.append("--unsafe-fixes")
    if inputs.validate:
        command += ["--validate", inputs.validate]
    print("optpatch: " + " ".join(command[2:]), flush=True)
    # The API token stays out of optpatch's environment, and so out of a `validate` command's (a fork's tests).
    env = {name: value for name, value in os.environ.items() if name not in ("INPUT_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")}
    with open(stdout_path, "wb") as stdout:
        completed = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=False, env=env)
    stderr = completed.stderr.decode("utf-8", "replace")
    sys.stderr.write(stderr)
    if completed.returncode == 4:
        raise ActionError(f"validation failed (`{inputs.validate}`); nothing was published: {stderr.strip()[-2000:]}")
    if completed.returncode not in (0, 3):
        raise ActionError(f"optpatch exited with status {completed.returncode}: {stderr.strip()[-2000:]}")
    if completed.returncode == 3:
        print("::warning title=optpatch::some files could not be analysed; the JSON report lists them")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    summary = report["summary"]
    fixable = summary["written"] > 0 and inputs.fail_on is FailOn.FIXABLE
    outputs = {
        "patch": str(patch),
        "report": str(report_path),
        "sarif": str(stdout_path) if fmt == "sarif" else "",
        "body": str(stdout_path) if fmt == "markdown" else "",
        "fixes": str(summary["written"]),
        "proposals": str(summary["refused"]),
        "counts": json.dumps(counts(report), sort_keys=True),
        "fail": "true" if fixable else "false",
        "artifact-dir": str(work),
    }
    return report, outputs


def counts(report: dict) -> dict:
    """Fixes by rule (applied and proposed) and by tier: the action's `counts` output."""
    by_rule: dict[str, dict[str, int]] = {}
    by_tier: dict[str, dict[str, int]] = {}
    for finding in report["findings"]:
        if finding["verdict"] != "fix":
            continue
        status = "applied" if finding["written"] else "proposed"
        for table, key in ((by_rule, finding["code"]), (by_tier, finding["tier"] or "safe")):
            row = table.setdefault(key, {"applied": 0, "proposed": 0})
            row[status] += 1
    return {"by_rule": by_rule, "by_tier": by_tier}


def git_head() -> str:
    completed = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if completed.returncode != 0:
        raise ActionError("the working directory is not a git checkout: run actions/checkout before optpatch")
    return completed.stdout.strip()


def write_outputs(path: Path | None, outputs: dict[str, str]) -> None:
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            handle.write(f"{name}={value.replace(chr(10), ' ')}\n")  # one line each: paths and compact JSON


def one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
