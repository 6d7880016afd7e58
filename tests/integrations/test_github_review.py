"""`mode: review` end to end: the pull_request step (read-only) and the workflow_run step against a local GitHub.

The review GitHub receives is checked the way a reviewer would use it: its
suggestions, committed, must give exactly optpatch's patch.
"""

import json
import re
import subprocess

import pytest

from action_runs import SERVER, open_pull, pull_request_event, run_action, workflow_run_event
from fake_github import TOKEN, FakeGitHub
from git_repos import git, make_repo, write_files

BASE = """import torch


def step(x):
    return x * 2
"""
# Added by the pull request: two fixes whose lines overlap (the import of `zeros` is edited for the
# second), a kept site (`acc` is read before it is written), and an unsafe proposal (different random numbers).
FEATURE = """import torch
from torch import zeros


def step(x):
    out = torch.zeros(x.shape)
    out.copy_(x)
    return out


def other(x):
    buf = zeros(x.shape)
    buf.copy_(x)
    return buf


def kept(x):
    acc = torch.zeros(x.shape)
    acc += x
    return acc


def noise(n, device: torch.device):
    return torch.randn(n).to(device)
"""
PLAIN_FIX = "import torch\n\n\ndef plain(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"


@pytest.fixture
def pull(tmp_path, monkeypatch):
    """A repository with a pull request (feature against main), and the fixed dates that make its commit ids stable."""
    for variable in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(variable, "2026-11-26T12:00:00Z")
    repo = make_repo(tmp_path / "project", {"model.py": BASE, "plain.py": "import torch\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "-c", "feature")
    write_files(repo, {"model.py": FEATURE, "plain.py": PLAIN_FIX})
    commit(repo, "feature work")
    return repo, base


def commit(repo, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def prepare(repo, base, tmp_path, fake, number=7):
    head = git(repo, "rev-parse", "HEAD").strip()
    workdir = tmp_path / "work"
    completed, outputs = run_action(repo, tmp_path, fake, "pull_request", pull_request_event(number, head, base), workdir,
                                    mode="review")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return head, workdir, outputs


def post(repo, base, head, tmp_path, fake, workdir, number=7):
    open_pull(fake, repo, number, base, head)
    completed, _ = run_action(tmp_path, tmp_path, fake, "workflow_run", workflow_run_event(head), workdir,
                              mode="review", token=TOKEN)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed


def posted_reviews(fake):
    return [r.body for r in fake.requests if r.method == "POST" and r.path.endswith("/reviews")]


def apply_suggestions(files: dict[str, str], comments: list[dict]) -> dict[str, str]:
    """Commit each suggestion as GitHub does: its text replaces lines start_line..line (bottom first)."""
    result = dict(files)
    for comment in sorted(comments, key=lambda c: (c["path"], c["line"]), reverse=True):
        suggestion = re.search(r"^(`{3,})suggestion\n(.*?)^\1$", comment["body"], re.S | re.M)
        lines = result[comment["path"]].split("\n")
        first = comment.get("start_line", comment["line"])
        replacement = suggestion.group(2)[:-1].split("\n") if suggestion.group(2) else []
        lines[first - 1 : comment["line"]] = replacement
        result[comment["path"]] = "\n".join(lines)
    return result


def test_review_suggestions_reproduce_the_patch_and_kept_sites_are_not_posted(pull, tmp_path):
    repo, base = pull
    with FakeGitHub() as fake:
        head, workdir, outputs = prepare(repo, base, tmp_path, fake)
        assert fake.requests == []  # the pull_request step, a fork's read-only job, sends nothing at all
        assert outputs["fixes"] == "3" and outputs["proposals"] == "1" and outputs["fail"] == "true"
        assert json.loads(outputs["counts"]) == {
            "by_rule": {"OPT101": {"applied": 3, "proposed": 0}, "OPT102": {"applied": 0, "proposed": 1}},
            "by_tier": {"safe": {"applied": 3, "proposed": 0}, "unsafe": {"applied": 0, "proposed": 1}},
        }
        assert outputs["artifact-dir"] == str(workdir / "review")
        assert {p.name for p in (workdir / "review").iterdir()} == {"review.json", "model_patch.diff", "report.json"}

        post(repo, base, head, tmp_path, fake, workdir)
        (review,) = [r.body for r in fake.requests if r.method == "POST"]
        assert review["commit_id"] == head and review["event"] == "COMMENT"
        comments = review["comments"]
        bundle = json.loads((workdir / "review" / "review.json").read_text())
        applied_keys = {c["key"] for c in bundle["comments"] if c["applied"]}
        fixes = [c for c in comments if re.search(r"key=(\w+)", c["body"]).group(1) in applied_keys]
        proposals = [c for c in comments if c not in fixes]

    # Committing the fixes' suggestions gives exactly the patch.
    files = {name: (repo / name).read_text() for name in ("model.py", "plain.py")}
    suggested = apply_suggestions(files, fixes)
    subprocess.run(["git", "apply", str(workdir / "review" / "model_patch.diff")], cwd=repo, check=True)
    assert suggested == {name: (repo / name).read_text() for name in files}
    assert suggested != files

    # One suggestion for the two overlapping fixes (lines 2-12), one for plain.py, one for the proposal.
    assert [(c["path"], c.get("start_line"), c["line"]) for c in fixes] == [("model.py", 2, 12), ("plain.py", None, 5)]
    assert [(c["path"], c.get("start_line"), c["line"]) for c in proposals] == [("model.py", None, 24)]
    assert "proposed, not applied: unsafe tier" in proposals[0]["body"] and "```suggestion" in proposals[0]["body"]
    assert all("`OPT101` zeros-to-empty** (safe tier, fix;" in c["body"] for c in fixes)
    report = json.loads((workdir / "review" / "report.json").read_text())
    (kept,) = [f for f in report["findings"] if f["verdict"] == "keep"]
    assert kept["line"] == 18
    assert not any(c.get("start_line", c["line"]) <= 18 <= c["line"] for c in comments)
    assert not any("acc = " in c["body"] for c in comments)


def test_a_rerun_adds_nothing_and_a_fixed_site_is_resolved(pull, tmp_path):
    repo, base = pull
    with FakeGitHub() as fake:
        head, workdir, _ = prepare(repo, base, tmp_path, fake)
        post(repo, base, head, tmp_path, fake, workdir)
        first_review = fake.reviews[0]["id"]
        count = len(fake.requests)

        post(repo, base, head, tmp_path, fake, workdir)  # the same run again: nothing to write
        assert [r for r in fake.requests[count:] if r.writes] == []

        # The author commits plain.py's suggestion by hand; optpatch runs on the new head.
        (repo / "plain.py").write_text(PLAIN_FIX.replace("torch.zeros(", "torch.empty("))
        new_head = commit(repo, "take the suggestion")
        count = len(fake.requests)
        _, workdir, _ = prepare(repo, base, tmp_path, fake)
        post(repo, base, new_head, tmp_path, fake, workdir)
        writes = [(r.method, r.path.rsplit("/", 2)[-2:]) for r in fake.requests[count:] if r.writes]

    resolved = [c for c in fake.review_comments if c["path"] == "plain.py"]
    assert len(resolved) == 1 and "resolved -->" in resolved[0]["body"] and "```suggestion" not in resolved[0]["body"]
    assert "Resolved at `" + new_head[:7] in resolved[0]["body"]
    # model.py's two comments still stand: not posted again; the one new review carries no comment twice.
    assert len([c for c in fake.review_comments if c["path"] == "model.py"]) == 2
    assert [w[0] for w in writes] == ["PATCH", "PUT"]  # resolve the comment, update the review's body
    review = next(r for r in fake.reviews if r["id"] == first_review)
    assert "1 earlier comment(s) resolved" in review["body"]


def test_new_comments_go_into_a_new_review_and_the_earlier_one_says_superseded(pull, tmp_path):
    repo, base = pull
    with FakeGitHub() as fake:
        head, workdir, _ = prepare(repo, base, tmp_path, fake)
        post(repo, base, head, tmp_path, fake, workdir)
        write_files(repo, {"more.py": PLAIN_FIX})
        new_head = commit(repo, "more work")
        _, workdir, _ = prepare(repo, base, tmp_path, fake)
        post(repo, base, new_head, tmp_path, fake, workdir)
    assert len(fake.reviews) == 2
    assert fake.reviews[0]["body"].startswith("<!-- optpatch-review superseded -->")
    assert [c["path"] for c in fake.review_comments] == ["model.py", "model.py", "plain.py", "more.py"]
    assert "optpatch: 4 fix(es) and 1 proposal(s)" in fake.reviews[1]["body"] and "resolved" not in fake.reviews[1]["body"]


def test_a_fix_whose_lines_leave_the_diff_is_listed_in_the_body(tmp_path, monkeypatch):
    """The fix edits the import on line 2, which the pull request's diff does not show (no comment may sit there)."""
    padding = "".join(f"\n\ndef helper_{index}(x):\n    return x + {index}\n" for index in range(8))
    repo = make_repo(tmp_path / "project", {"model.py": BASE.replace("torch\n", "torch\nfrom torch import zeros\n", 1) + padding})
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "-c", "feature")
    write_files(repo, {"model.py": (repo / "model.py").read_text() + "\n\ndef late(x):\n    buf = zeros(x.shape)\n    buf.copy_(x)\n    return buf\n"})
    commit(repo, "late")
    with FakeGitHub() as fake:
        head, workdir, _ = prepare(repo, base, tmp_path, fake)
        post(repo, base, head, tmp_path, fake, workdir)  # the fake refuses a comment outside the diff (422)
    (review,) = posted_reviews(fake)
    assert review["comments"] == []
    assert "**Outside this pull request's diff**" in review["body"]
    assert "- `model.py:2-42`: **optpatch `OPT101` zeros-to-empty**" in review["body"]


def test_nothing_is_posted_for_a_pull_request_that_moved_on_or_a_bundle_that_lies(pull, tmp_path):
    repo, base = pull
    with FakeGitHub() as fake:
        head, workdir, _ = prepare(repo, base, tmp_path, fake)
        open_pull(fake, repo, 7, base, head)
        fake.pulls[7].head_sha = "f" * 40  # a newer push: its own run will review it
        completed, _ = run_action(tmp_path, tmp_path, fake, "workflow_run", workflow_run_event(head), workdir,
                                  mode="review", token=TOKEN)
        assert completed.returncode == 0 and "no longer at the analysed commit" in completed.stdout
        lying, _ = run_action(tmp_path, tmp_path, fake, "workflow_run", workflow_run_event("e" * 40), workdir,
                              mode="review", token=TOKEN)
        assert lying.returncode == 1 and "the bundle was made at" in lying.stdout
        assert fake.writes() == []


def test_a_clean_pull_request_gets_no_review(tmp_path):
    repo = make_repo(tmp_path / "project", {"model.py": BASE})
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "-c", "feature")
    write_files(repo, {"model.py": BASE + "\n\ndef more(x):\n    return x + 1\n"})
    commit(repo, "clean")
    with FakeGitHub() as fake:
        head, workdir, outputs = prepare(repo, base, tmp_path, fake)
        assert outputs["fail"] == "false"
        post(repo, base, head, tmp_path, fake, workdir)
        assert fake.writes() == []


def test_the_review_step_needs_the_pull_requests_head_checked_out(pull, tmp_path):
    repo, base = pull
    with FakeGitHub() as fake:
        completed, _ = run_action(repo, tmp_path, fake, "pull_request", pull_request_event(7, "a" * 40, base),
                                  tmp_path / "work", mode="review")
    assert completed.returncode == 1 and "ref: ${{ github.event.pull_request.head.sha }}" in completed.stdout


SUGGESTION = re.compile(r"^(`{3,})suggestion\n(.*?)^\1$", re.S | re.M)


def rendered_review(review: dict, files: dict[str, str]) -> str:
    """REVIEW (the recorded request) as GitHub shows it: its body, then each comment under its lines,
    a suggestion as the change it commits (old lines from FILES, the pull request's head)."""
    out = ["> **github-actions** bot reviewed", ">"] + [f"> {line}".rstrip() for line in review["body"].splitlines()[1:]]
    for comment in review["comments"]:
        first = comment.get("start_line", comment["line"])
        where = f"line {first}" if first == comment["line"] else f"lines {first} to {comment['line']}"
        out += ["", f"**`{comment['path']}`**, {where}:", ""]
        body = comment["body"].split("\n", 1)[1]  # the hidden key
        match = SUGGESTION.search(body)
        old = files[comment["path"]].split("\n")[first - 1 : comment["line"]]
        new = match.group(2)[:-1].split("\n") if match.group(2) else []
        change = ["Suggested change:", "```diff", *(f"-{line}" for line in old), *(f"+{line}" for line in new), "```"]
        for line in body[: match.start()].splitlines() + change + body[match.end():].splitlines():
            out.append(f"> {line}".rstrip())
    return "\n".join(out) + "\n"
