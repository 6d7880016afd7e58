"""Running the action's step as GitHub Actions would, against a FakeGitHub: environment, event file, outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fake_github import FakeGitHub, PullState
from git_repos import git

SERVER = "https://github.example"
RUN_ID = "4242"


def run_action(cwd: Path, tmp: Path, fake: FakeGitHub, event_name: str, event: dict, workdir: Path,
               **inputs: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """`python -m optpatch.integrations.action` in CWD with the variables action.yml and the runner set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_", "OPTPATCH_WORKDIR"))}
    event_file = tmp / f"event-{len(list(tmp.glob('event-*')))}.json"
    event_file.write_text(json.dumps(event))
    output_file = tmp / "github_output"
    output_file.write_text("")
    env.update(
        GITHUB_API_URL=fake.url, GITHUB_REPOSITORY=fake.repository, GITHUB_EVENT_NAME=event_name,
        GITHUB_EVENT_PATH=str(event_file), GITHUB_OUTPUT=str(output_file), GITHUB_SERVER_URL=SERVER,
        GITHUB_RUN_ID=RUN_ID, OPTPATCH_WORKDIR=str(workdir),
    )
    for name, value in inputs.items():
        env[f"INPUT_{name.upper()}"] = value
    completed = subprocess.run([sys.executable, "-m", "optpatch.integrations.action"], cwd=cwd, env=env,
                               capture_output=True, text=True, timeout=120)
    outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
    return completed, outputs


def pull_request_event(number: int, head: str, base: str, fork: bool = True) -> dict:
    return {"pull_request": {"number": number, "head": {"sha": head, "repo": {"fork": fork}}, "base": {"sha": base}}}


def workflow_run_event(head: str) -> dict:
    return {"workflow_run": {"event": "pull_request", "head_sha": head, "id": int(RUN_ID),
                             "html_url": f"{SERVER}/owner/project/actions/runs/{RUN_ID}"}}


def open_pull(fake: FakeGitHub, repo: Path, number: int, base: str, head: str) -> PullState:
    """Pull request NUMBER as GitHub would show it: head HEAD, and the diff of HEAD against its merge base with BASE."""
    pull = fake.pulls.get(number) or PullState(number, head, "feature", "main")
    pull.head_sha = head
    merge_base = git(repo, "merge-base", base, head).strip()
    names = git(repo, "diff", "--name-only", merge_base, head).split()
    pull.files = [(name, _hunks(git(repo, "diff", merge_base, head, "--", name))) for name in names]
    fake.pulls[number] = pull
    for commit in (head, merge_base):
        fake.file_texts[commit] = {name: git(repo, "show", f"{commit}:{name}") for name in names if _exists(repo, commit, name)}
    return pull


def _exists(repo: Path, commit: str, name: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{commit}:{name}"], cwd=repo, capture_output=True).returncode == 0


def _hunks(diff: str) -> str:
    """GitHub's `patch` field: the diff from its first hunk header on."""
    return diff[diff.index("@@"):] if "@@" in diff else ""

