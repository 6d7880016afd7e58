"""`mode: patch-pr` end to end: a clone of a local remote, the action's step, and a local GitHub holding the pull requests."""

import pytest

from action_runs import run_action
from fake_github import TOKEN, FakeGitHub
from git_repos import CLEAN, FIXABLE, FIXED, git, make_repo, write_files

BRANCH = "optpatch/fixes"
# A stand-in for a test suite: it passes, and reports itself poisoned the way optpatch's sitecustomize
# would in a Python process, without the seconds of importing torch (tests/poisoned_tests does the same).
# It fails if the API token reached it: a validate command never sees the token.
PASSING_SUITE = 'test -z "$INPUT_TOKEN" && printf "$$ %s\\n" "$OPTPATCH_POISON" >> "$OPTPATCH_POISON_LOG"'


@pytest.fixture
def remote(tmp_path):
    """A bare repository standing for GitHub's copy, main holding one fixable file."""
    seed = make_repo(tmp_path / "seed", {"model.py": FIXABLE, "clean.py": CLEAN})
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"))
    return tmp_path / "origin.git"


def scheduled_run(remote, tmp_path, fake, name: str, **inputs):
    """A fresh checkout of main, as actions/checkout makes one for a scheduled run, and the action's step in it."""
    checkout = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(checkout))
    completed, outputs = run_action(checkout, tmp_path, fake, "schedule", {}, tmp_path / f"work-{name}",
                                    mode="patch-pr", token=TOKEN, **inputs)
    return checkout, completed, outputs


def branch_head(remote, branch=BRANCH) -> str:
    return git(remote, "for-each-ref", "--format=%(objectname)", f"refs/heads/{branch}").strip()


def test_opens_a_pull_request_whose_branch_is_the_patch_then_leaves_it_alone(remote, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    with FakeGitHub(remote=remote) as fake:
        checkout, completed, outputs = scheduled_run(remote, tmp_path, fake, "first", validate=PASSING_SUITE)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        assert outputs["pull-request"] == "1" and outputs["fixes"] == "1" and outputs["fail"] == "false"
        pull = fake.pulls[1]
        assert (pull.head_ref, pull.base_ref, pull.title) == (BRANCH, "main", "optpatch: 1 fix(es) in 1 file(s)")
        assert pull.body.startswith("<!-- optpatch-report -->\n### optpatch: 1 fix(es) in 1 file(s)")
        assert "| fix | `OPT101` zeros-to-empty | `model.py:5:11` | safe | low (per-step) |" in pull.body
        assert f"#### Validation\n\n`{PASSING_SUITE}`, " in pull.body
        assert "Each scheduled run updates this pull request" in pull.body

        # The branch is main plus exactly the patch.
        verify = tmp_path / "verify"
        git(tmp_path, "clone", "-q", str(remote), str(verify))
        git(verify, "apply", outputs["patch"])
        assert git(verify, "diff", f"origin/{BRANCH}") == ""
        assert (verify / "model.py").read_text() == FIXED
        assert git(verify, "log", "-1", "--format=%s", f"origin/{BRANCH}").strip() == pull.title

        pushed = branch_head(remote)
        count = len(fake.requests)
        _, again, _ = scheduled_run(remote, tmp_path, fake, "second", validate=PASSING_SUITE)
        assert again.returncode == 0, again.stdout + again.stderr
        assert [r for r in fake.requests[count:] if r.writes] == [] and branch_head(remote) == pushed
        assert "pull request unchanged (#1)" in again.stdout


def test_closes_its_pull_request_and_deletes_the_branch_once_the_fixes_are_gone(remote, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    with FakeGitHub(remote=remote) as fake:
        scheduled_run(remote, tmp_path, fake, "first")
        assert fake.pulls[1].state == "open" and branch_head(remote)

        # Someone merges the fix (by hand) into main.
        work = tmp_path / "maintainer"
        git(tmp_path, "clone", "-q", str(remote), str(work))
        write_files(work, {"model.py": FIXED})
        git(work, "-c", "user.name=m", "-c", "user.email=m@example.invalid", "commit", "-q", "-am", "take the fix")
        git(work, "push", "-q", "origin", "main")

        count = len(fake.requests)
        _, completed, outputs = scheduled_run(remote, tmp_path, fake, "after")
        assert completed.returncode == 0, completed.stdout + completed.stderr
        writes = [(r.method, r.path.split("/repos/owner/project")[1]) for r in fake.requests[count:] if r.writes]
    assert writes == [("POST", "/issues/1/comments"), ("PATCH", "/pulls/1")]
    assert fake.pulls[1].state == "closed" and "nothing left to fix" in fake.issue_comments[0]["body"]
    assert branch_head(remote) == "" and outputs["pull-request"] == "1"


def test_nothing_fixable_opens_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    seed = make_repo(tmp_path / "seed", {"clean.py": CLEAN})
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"))
    remote = tmp_path / "origin.git"
    with FakeGitHub(remote=remote) as fake:
        _, completed, outputs = scheduled_run(remote, tmp_path, fake, "first")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert fake.writes() == [] and fake.pulls == {} and branch_head(remote) == "" and outputs["pull-request"] == ""


def test_a_failing_validation_publishes_nothing(remote, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    with FakeGitHub(remote=remote) as fake:
        _, completed, _ = scheduled_run(remote, tmp_path, fake, "first", validate="exit 1")
    assert completed.returncode == 1 and "validation failed" in completed.stdout
    assert fake.requests == [] and branch_head(remote) == ""
