"""The text report at real size: a tree with paths of 110 characters and hundreds of findings, at 60-200 columns.

Rendered through the reporters themselves (the command line's part, the
width, is tested through the console script in test_report_options.py).
Every promise of reporters/text.py is checked on every finding of the
example and of every rule's fixtures, kept sites included: no line longer
than the width unless it is one unbreakable location, each reason whole
(its prose untouched, its quoted code collapsed and at most shortened), and
a number of lines that grows linearly with the findings.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import pytest

from conftest import FIXTURES, REPO_ROOT
from optpatch.config import Settings
from optpatch.engine import run
from optpatch.model import Decided, Verdict
from optpatch.policy import FixPolicy
from optpatch.reporters import ReportOptions
from optpatch.reporters.status import PATCH_WRITTEN
from optpatch.reporters.status import status_of
from optpatch.reporters.text import ELLIPSIS, code_limit, header, prose, render_concise, render_full, shown_findings
from optpatch.results import FileResult, RunResult

WIDTHS = (60, 80, 120, 200)
# Kernel libraries nest this deep: the tree had locations of more than 110 characters.
DEEP = "src/a_kernel_library/csrc/attention/backends/flash_decoding/variants"


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> RunResult:
    root = tmp_path_factory.mktemp("real") / "tree"
    shutil.copytree(REPO_ROOT / "examples" / "minivllm", root / DEEP / "minivllm")
    shutil.copytree(FIXTURES, root / DEEP / "fixtures")
    found = run(root, Settings(), FixPolicy(), use_cache=False, jobs=1)
    assert max(len(f.location()) for f in found.findings) > 110
    assert {f.verdict for f in found.findings} == set(Verdict) and len(found.findings) > 400
    return found


def rendered(result: RunResult, width: int, render=render_full, **options) -> list[str]:
    lines = render(result, ReportOptions(delivery=PATCH_WRITTEN, verbose=True, width=width, **options))
    return [line.plain for line in lines]


def copies(result: RunResult, count: int) -> RunResult:
    """The same findings COUNT times over, in other files."""
    files = [
        FileResult(f"copy{index}/{file.rel}", [Decided(replace(f, path=f"copy{index}/{f.path}"), decision)
                                                for f, decision in file.decided])
        for index in range(count) for file in result.files
    ]
    return RunResult(result.root, files, [], [], result.seconds)


def blocks(lines: list[str]) -> list[list[str]]:
    """The findings' blocks: the runs of lines between blank lines, before the summary."""
    found, current = [], []
    for line in lines:
        if line.startswith("Summary:"):
            break
        if line:
            current.append(line)
        elif current:
            found.append(current)
            current = []
    return found


def code_spans(text: str) -> list[str]:
    return re.findall(r"`[^`]*`", text)


def without_code(text: str) -> list[str]:
    return re.sub(r"`[^`]*`", " ", text).split()


@pytest.mark.parametrize("width", WIDTHS)
def test_no_line_is_longer_than_the_width_but_an_unbreakable_location(result, width):
    lines = rendered(result, width)
    headers = {header(d.finding, status_of(d, PATCH_WRITTEN)) for d in result.decided}
    # A header (never wrapped: one line to grep), or one word longer than the width (a path a reason cites).
    too_long = [line for line in lines if len(line) > width]
    wrappable = [line for line in too_long if line not in headers and len(line.split()) > 1]
    assert not wrappable, wrappable[:3]
    if width == 60:
        assert too_long, "the tree's paths should be longer than 60 columns"
    assert not [line for line in lines if line != line.rstrip()], "trailing spaces"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_reason_appears_whole_with_only_its_code_shortened(result, width):
    findings = shown_findings(result, ReportOptions(delivery=PATCH_WRITTEN, verbose=True))
    found = blocks(rendered(result, width))
    assert len(found) == len(findings)
    shortened = 0
    for (finding, _), block in zip(findings, found):
        text = " ".join(line.strip() for line in block)
        assert finding.location() in text and finding.code in text
        shown = prose(finding.reason, code_limit(width))
        assert shown in text, (finding.location(), shown)
        assert without_code(shown) == without_code(finding.reason)  # the prose, word for word
        for original, displayed in zip(code_spans(finding.reason), code_spans(shown)):
            collapsed = " ".join(original.split())
            if displayed != collapsed:
                shortened += 1
                assert displayed.endswith(ELLIPSIS + "`") and collapsed.startswith(displayed[:-2])
                assert len(displayed) <= code_limit(width)
    assert shortened, "some quoted code should be long enough to be shortened"


def test_quoted_code_on_many_lines_is_one_line():
    assert prose("filled by `self.x[:n].copy_(\n        y,\n        non_blocking=True)` (L15)", 60) == (
        "filled by `self.x[:n].copy_( y, non_blocking=True)` (L15)"
    )
    assert prose("`" + "a" * 100 + "` then", 20) == "`" + "a" * 17 + ELLIPSIS + "` then"


@pytest.mark.parametrize("width", WIDTHS)
def test_lines_grow_linearly_with_the_findings(result, width):
    counts = {n: len(rendered(copies(result, n), width)) for n in (1, 2, 4)}
    per_copy = counts[2] - counts[1]
    assert abs((counts[4] - counts[2]) - 2 * per_copy) <= 4, counts  # the summary's wrapping may move a line or two
    # A block is a header, a short message, the reason, the call path and a blank line; the table took 52
    # lines a finding.
    assert per_copy <= {60: 12, 80: 10, 120: 8, 200: 6}[width] * len(result.findings), per_copy / len(result.findings)


def test_concise_is_one_line_per_finding_then_the_summary(result):
    lines = rendered(result, 80, render_concise)
    findings = [line for line in lines[: lines.index("")]]
    shown = shown_findings(result, ReportOptions(delivery=PATCH_WRITTEN, verbose=True))
    assert len(findings) == len(result.findings) == len(shown)
    assert all(line.startswith(f"{f.location()}: {f.code} {f.name} [") for line, (f, _) in zip(findings, shown))
    assert lines[len(findings) + 1].startswith("Summary:")
    assert not any("proof:" in line or "blocked by:" in line for line in findings)  # `explain` has the proof


def test_fixes_come_first_then_proposals_then_advice_and_show_picks():
    from optpatch.reporters.status import Status

    result = run(REPO_ROOT / "examples" / "minivllm", Settings(), FixPolicy(), use_cache=False, jobs=1)
    order = [status_of(f) for f in shown_findings(result, ReportOptions())]
    assert order == sorted(order, key=[Status.FIXABLE, Status.PROPOSED, Status.ADVICE].index) and Status.KEPT not in order
    only = shown_findings(result, ReportOptions(show=frozenset({"proposals", "kept"})))
    assert {status_of(f) for f in only} == {Status.PROPOSED, Status.KEPT}


def test_kept_sites_are_listed_only_with_verbose(result):
    quiet = render_full(result, ReportOptions(delivery=PATCH_WRITTEN, width=100))
    kept = [f for f in result.findings if f.verdict is Verdict.KEEP]
    text = "\n".join(line.plain for line in quiet)
    assert not any(f"{f.location()}: {f.code}" in text for f in kept)
    assert f"{len(kept)} kept" in text and "Kept sites are listed with -v" in text
