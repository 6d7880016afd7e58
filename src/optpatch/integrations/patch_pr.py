"""`mode: patch-pr`: the fixes as a branch and a pull request, opened, updated, or closed when they are gone.

The action has already run `optpatch apply --write` on the checked-out base
branch (with `--validate` when asked, which is what lets validate-tier fixes
in). Here the files the fixes changed are committed on the bot's branch,
which is force-pushed only when its tree differs from what is there, and
one pull request from that branch is opened or its title and body updated.
When nothing is fixable, nothing is opened; an open pull request from the
branch is closed with a comment, and the branch deleted.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from optpatch.integrations.github_review import BODY_LIMIT

# The identity commits get where the job configured none: GitHub's own for GITHUB_TOKEN's actor.
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


class GitError(Exception):
    pass


@dataclass(frozen=True)
class PublishOutcome:
    pull_request: int | None
    action: str  # "opened", "updated", "unchanged", "closed" or "none"


def git(root: Path, *args: str) -> str:
    completed = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if completed.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed in {root}: {completed.stderr.strip()}")
    return completed.stdout.strip()


def publish(root: Path, report: dict, body: str, repo, base: str, branch: str, run_url: str,
            remote: str = "origin") -> PublishOutcome:
    """Commit the files REPORT's applied fixes changed (already written under ROOT) and open or update the PR."""
    owner = repo.full_name.split("/")[0]
    open_pulls = list(repo.get_pulls(state="open", head=f"{owner}:{branch}", base=base))
    changed = sorted({f["path"] for f in report["findings"] if f["written"]})
    if not changed:
        for pull in open_pulls:
            pull.create_issue_comment(f"optpatch finds nothing left to fix on `{base}` ({run_url}): closing.")
            pull.edit(state="closed")
        if git(root, "ls-remote", "--heads", remote, branch):
            git(root, "push", "-q", remote, "--delete", branch)
        return PublishOutcome(open_pulls[0].number if open_pulls else None, "closed" if open_pulls else "none")

    base_sha = git(root, "rev-parse", "HEAD")
    title, message = titles(report)
    commit(root, branch, changed, message)
    pushed = push_if_changed(root, branch, remote)
    full_body = pull_body(body, base, base_sha)
    if open_pulls:
        pull = open_pulls[0]
        if pull.title != title or pull.body != full_body:
            pull.edit(title=title, body=full_body)
            return PublishOutcome(pull.number, "updated")
        return PublishOutcome(pull.number, "updated" if pushed else "unchanged")
    pull = repo.create_pull(base=base, head=branch, title=title, body=full_body)
    return PublishOutcome(pull.number, "opened")


def titles(report: dict) -> tuple[str, str]:
    """The pull request's title, and the commit message: the fixes by rule."""
    applied = [f for f in report["findings"] if f["written"]]
    files = len({f["path"] for f in applied})
    title = f"optpatch: {len(applied)} fix(es) in {files} file(s)"
    by_rule: dict[str, int] = {}
    for finding in applied:
        name = f"{finding['code']} {finding['name']}"
        by_rule[name] = by_rule.get(name, 0) + 1
    lines = [f"- {name}: {count}" for name, count in sorted(by_rule.items())]
    return title, title + "\n\n" + "\n".join(lines) + "\n"


def commit(root: Path, branch: str, paths: list[str], message: str) -> None:
    git(root, "switch", "-q", "-C", branch)
    git(root, "add", "--", *paths)
    identity = []
    if not _configured(root, "user.email"):
        identity = ["-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}"]
    git(root, *identity, "commit", "-q", "-m", message)


def _configured(root: Path, key: str) -> bool:
    return subprocess.run(["git", "config", key], cwd=root, capture_output=True).returncode == 0


def push_if_changed(root: Path, branch: str, remote: str) -> bool:
    """Force-push BRANCH unless the remote branch already holds the same tree (no notification for nothing)."""
    if git(root, "ls-remote", "--heads", remote, branch):
        git(root, "fetch", "-q", remote, branch)
        if git(root, "rev-parse", "FETCH_HEAD^{tree}") == git(root, "rev-parse", "HEAD^{tree}"):
            return False
    git(root, "push", "-q", "--force", remote, f"HEAD:refs/heads/{branch}")
    return True


def pull_body(body: str, base: str, base_sha: str) -> str:
    """BODY and a footer; no run link, so that a run that changes nothing leaves the body as it is."""
    footer = (
        f"\n---\nOpened by optpatch on `{base}` at `{base_sha[:7]}`; the latest run's artifact holds "
        "`model_patch.diff`. Each scheduled run updates this pull request, and closes it when nothing is left to fix.\n"
    )
    room = BODY_LIMIT - len(footer)
    if len(body) > room:
        body = body[: room - 80] + "\n\n(cut to GitHub's limit: the run's artifact holds the whole report)\n"
    return body + footer
