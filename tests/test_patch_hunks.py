"""The patch and the regions of multi-pass fixes, found from the edits, against difflib over whole files.

patch.file_diff no longer diffs whole files: it aligns the lines the edits
touched (line_diff.py), from the spans the passes changed (offsets.py).
`difflib_file_diff` below is the writer it replaced, kept as the oracle:
on files whose unchanged lines between edits are not repeated elsewhere at
length (line_diff.py says why that is the condition), the patch must be
byte for byte what it gave; on any file at all, the patch must rewrite the
old bytes into exactly the new ones.
"""

from __future__ import annotations

import codecs
import difflib
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from optpatch.line_diff import WINDOW_LINES, LineBlock, LineBreaks, Opcode, Tag, opcodes
from optpatch.model import Context, Decided, Decision, Edit, Finding, Fix, Impact, Region, Tier, Verdict
from optpatch.offsets import PassEdits, changed_lines, composed_spans, relocate_to_original
from optpatch.patch import CONTEXT_LINES, file_diff, hunks, write_patch
from optpatch.planner import apply_edits
from optpatch.results import FileChange
from optpatch.source import SourceFile

_LINE = re.compile(rb"[^\n]*\n|[^\n]+\Z")
REPEATED = ["", "    }", "    return x"]  # lines real code repeats: blank lines, closing braces, returns


# -- the oracle: the writer before line_diff.py -------------------------------------------------


def difflib_file_diff(rel: str, old: bytes, new: bytes) -> bytes:
    """The patch of one file as a whole-file difflib made it."""
    from optpatch.patch import _lines, _quote, _range

    a, b = _LINE.findall(old), _LINE.findall(new)
    old_name, new_name = _quote("a/" + rel), _quote("b/" + rel)
    out = [b"diff --git %s %s\n--- %s\n+++ %s\n" % (old_name, new_name, old_name, new_name)]
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(CONTEXT_LINES):
        out.append(b"@@ -%s +%s @@\n" % (_range(group[0][1], group[-1][2]), _range(group[0][3], group[-1][4])))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_lines(b" ", a[i1:i2]))
            else:
                out.extend(_lines(b"-", a[i1:i2]) + _lines(b"+", b[j1:j2]))
    return b"".join(out)


def rewrite(text: str, passes: list[list[Edit]], encoding: str = "utf-8", bom: bool = False) -> FileChange:
    """The file change the engine hands the patch writer for TEXT rewritten by PASSES (passes.settle does the same)."""
    final = text
    for edits in passes:
        final = apply_edits(final, edits)
    prefix = codecs.BOM_UTF8 if bom else b""
    blocks = tuple(changed_lines(text, final, passes, LineBreaks.LF))
    return FileChange("f.py", prefix + text.encode(encoding), prefix + final.encode(encoding), blocks)


def apply_patch(old: bytes, patch: bytes) -> bytes:
    """Apply a one-file unified diff strictly: every context and removed line must be where the hunk says."""
    lines = _LINE.findall(old)
    body = patch.split(b"\n", 3)[3]
    result, at = [], 0
    hunks = re.split(rb"(?m)^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n", body)[1:]
    for index in range(0, len(hunks), 5):
        old_start, old_count, _, _, text = hunks[index : index + 5]
        count = int(old_count) if old_count is not None else 1
        start = int(old_start) - 1 if count else int(old_start)
        result += lines[at:start]
        at = start
        rows = text.split(b"\n")[:-1]
        for number, row in enumerate(rows):
            if row.startswith(b"\\"):
                continue
            ends = not (number + 1 < len(rows) and rows[number + 1].startswith(b"\\"))
            content = row[1:] + (b"\n" if ends else b"")
            if row[:1] in (b" ", b"-"):
                assert lines[at] == content, (at, lines[at], content)
                at += 1
            if row[:1] in (b" ", b"+"):
                result.append(content)
        assert at == start + count
    return b"".join(result + lines[at:])


# -- generated files and edits ----------------------------------------------------------------


@st.composite
def files(draw, max_lines: int = 40) -> tuple[list[str], str, bool]:
    """Lines (unique, with runs of at most three lines real code repeats), the line ending, a final newline."""
    lines: list[str] = []
    repeated_run = 0
    for number in range(draw(st.integers(0, max_lines))):
        if repeated_run < 3 and draw(st.integers(0, 3)) == 0:
            lines.append(draw(st.sampled_from(REPEATED)))
            repeated_run += 1
        else:
            lines.append(f"line{number}")
            repeated_run = 0
    return lines, draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans())


def text_of(lines: list[str], eol: str, final_newline: bool) -> str:
    text = "".join(line + eol for line in lines)
    return text if final_newline or not text else text[: -len(eol)]


@st.composite
def edits_of(draw, text: str, eol: str, gap: int, tag: str) -> list[Edit]:
    """Edits on lines at least GAP unchanged lines apart: in-line changes, and lines inserted, deleted or replaced.

    Inserted lines are new, or copies of the line above or below (which lets
    the insertion slide, in difflib's eyes), or a line real code repeats.
    """
    starts = [0] + [match.end() for match in re.finditer(re.escape(eol), text)]
    if starts[-1] != len(text):
        starts.append(len(text))  # the last line, without its line ending
    count = len(starts) - 1  # lines
    lines = [text[starts[i] : starts[i + 1]] for i in range(count)]
    edits: list[Edit] = []
    line = draw(st.integers(0, gap))
    while line <= count:
        kind = draw(st.sampled_from(["word", "insert", "delete", "replace"] if line < count else ["insert"]))
        start = starts[line]
        width = min(draw(st.integers(1, 3)), count - line) if kind in ("delete", "replace") else 1
        end = starts[line + width] if line + width <= count else len(text)
        new_lines = [
            draw(st.sampled_from([f"{tag}{line}_{k}", *REPEATED] + lines[max(0, line - 1) : line + 1])) + eol
            for k in range(draw(st.integers(1, 3)))
        ]
        if kind == "word" and lines[line].strip():
            at = draw(st.integers(0, len(lines[line].rstrip("\r\n")) - 1))
            edits.append(Edit(start + at, start + at + 1, draw(st.sampled_from(["X", "", "YY"]))))
        elif kind == "insert":
            edits.append(Edit(start, start, "".join(new_lines)))
        elif kind == "delete":
            edits.append(Edit(start, end, ""))
        elif kind == "replace":
            edits.append(Edit(start, end, "".join(new_lines)))
        line += width + gap + draw(st.integers(0, gap))
    return edits


@st.composite
def sparse_rewrites(draw, gap: int = 12, two_passes: bool = False) -> tuple[str, list[list[Edit]]]:
    """A file and one or two passes of edits, far enough apart that difflib aligns the lines the edits kept.

    A second pass rewrites text the first one wrote, as OPT202 does over
    OPT201's edit: the composed spans must hold both.
    """
    lines, eol, final_newline = draw(files())
    text = text_of(lines, eol, final_newline)
    first = draw(edits_of(text, eol, 2 * gap + 2, "a"))
    passes = [first]
    if two_passes or (first and draw(st.booleans())):
        middle = apply_edits(text, first)
        landed = PassEdits(first)
        again = []
        for edit, start in zip(landed.edits, landed.new_starts):
            if edit.text and draw(st.booleans()):
                at = draw(st.integers(start, start + len(edit.text) - 1))
                again.append(Edit(at, at + 1, draw(st.sampled_from(["Z", "", f"b{at}" + eol]))))
        assume(again)
        passes.append(again)
        assume(apply_edits(middle, again) != middle)
    return text, passes


# -- the patch ----------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [8, 24])
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rewritten=sparse_rewrites())
def test_the_alignment_is_difflibs_where_the_edits_kept_lines_in_place(rewritten, window):
    """With small windows, so that these small files are aligned by the runs and not by difflib over the file."""
    text, passes = rewritten
    change = rewrite(text, passes)
    a, b = _LINE.findall(change.old), _LINE.findall(change.new)
    expected = [Opcode(Tag(tag), *rest) for tag, *rest in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()]
    assert opcodes(a, b, change.blocks, window) == (expected if a or b else [])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sparse_rewrites())
def test_the_patch_is_byte_for_byte_what_difflib_gave(rewritten):
    text, passes = rewritten
    change = rewrite(text, passes)
    assume(change.old != change.new)
    assert file_diff(change) == difflib_file_diff("f.py", change.old, change.new)


def test_blank_lines_inserted_on_both_sides_of_one_go_where_difflib_puts_them():
    """Two insertions a blank line apart in a run of blank lines: the longer run beyond them takes the blanks first."""
    before = "".join(f"a{n}\n" for n in range(6))
    after = "".join(f"b{n}\n" for n in range(30))
    text = before + "\n\n" + after
    edits = [Edit(len(before) + 1, len(before) + 1, "\n"), Edit(len(before) + 2, len(before) + 2, "\n")]
    change = rewrite(text, [edits])
    a, b = _LINE.findall(change.old), _LINE.findall(change.new)
    expected = [Opcode(Tag(tag), *rest) for tag, *rest in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()]
    assert expected[1] == Opcode(Tag.INSERT, 6, 6, 6, 8)  # before the blank lines: the 32-line run took them
    for window in (0, 4, WINDOW_LINES):
        assert opcodes(a, b, change.blocks, window) == expected


def test_a_long_repetitive_file_gets_difflibs_patch():
    """More lines than a window: one `torch.zeros` site in each of many small functions, every other one fixed."""
    text = "import torch\n" + "".join(
        f"\n\ndef f_{i}(n):\n    x = torch.zeros(n)\n    x.fill_(1)\n    return x\n" for i in range(240)
    )
    edits = [Edit(m.start(), m.start() + len("zeros"), "empty") for m in re.finditer("zeros", text)][::2]
    change = rewrite(text, [edits])
    assert len(_LINE.findall(change.old)) > 1000
    assert file_diff(change) == difflib_file_diff("f.py", change.old, change.new)


@st.composite
def opcode_lists(draw) -> list[Opcode]:
    a = draw(st.lists(st.sampled_from("abc"), max_size=40))
    b = draw(st.lists(st.sampled_from("abc"), max_size=40))
    return [Opcode(Tag(tag), *rest) for tag, *rest in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()]


@given(opcode_lists(), st.integers(0, 4))
def test_hunks_group_opcodes_as_difflib_does(codes, context):
    class Grouped(difflib.SequenceMatcher):
        def get_opcodes(self):
            return [tuple(code) for code in codes]

    expected = [[Opcode(Tag(tag), *rest) for tag, *rest in group] for group in Grouped(None, "", "").get_grouped_opcodes(context)]
    assert hunks(codes, context) == expected


@st.composite
def dense_rewrites(draw) -> tuple[str, list[list[Edit]]]:
    """Any file: lines from a tiny vocabulary, CR, LF or CRLF, edits anywhere, up to three passes."""
    lines = draw(st.lists(st.sampled_from(["a", "b", "", "}"]), max_size=30))
    original = text_of(lines, draw(st.sampled_from(["\n", "\r\n", "\r"])), draw(st.booleans()))
    text, passes = original, []
    for _ in range(draw(st.integers(1, 3))):
        points = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
        edits: list[Edit] = []
        for start, end in zip(points[::2], points[1::2]):
            inserted = draw(st.sampled_from(["", "a\n", "\n", "}\r\nb", "x", "\r", "a\n\na\n", "\x0c", "\u2028"]))
            if (start < end or inserted) and not (edits and start <= edits[-1].end):
                edits.append(Edit(start, end, inserted))
        passes.append(edits)
        text = apply_edits(text, edits)
    return original, passes


@pytest.mark.parametrize("window", [0, 4, WINDOW_LINES])
@settings(max_examples=300, deadline=None)
@given(rewritten=dense_rewrites())
def test_on_any_file_the_alignment_is_a_line_diff(rewritten, window):
    """Where difflib would align otherwise too, the alignment found from the runs is still a diff of the lines."""
    text, passes = rewritten
    change = rewrite(text, passes)
    a, b = _LINE.findall(change.old), _LINE.findall(change.new)
    codes = opcodes(a, b, change.blocks, window)
    for code, following in zip(codes, codes[1:]):
        assert (code.old_end, code.new_end) == (following.old_start, following.new_start)
        assert Tag.EQUAL in (code.tag, following.tag)  # difflib never puts two changes side by side
    for code in codes:
        assert (a[code.old_start : code.old_end] == b[code.new_start : code.new_end]) == (code.tag is Tag.EQUAL)
    ends = [(codes[0].old_start, codes[0].new_start), (codes[-1].old_end, codes[-1].new_end)] if codes else None
    assert ends == [(0, 0), (len(a), len(b))] if a or b else codes == []


@settings(max_examples=300, deadline=None)
@given(dense_rewrites())
def test_on_any_file_the_patch_rewrites_the_old_bytes_into_the_new(rewritten):
    text, passes = rewritten
    change = rewrite(text, passes)
    assume(change.old != change.new)
    assert apply_patch(change.old, file_diff(change)) == change.new


@settings(max_examples=300, deadline=None)
@given(dense_rewrites())
def test_lines_by_any_line_break_outside_the_blocks_are_unchanged(rewritten):
    """The regions' line split (str.splitlines: CR, LF, CRLF, form feed, U+2028, ...) as the patch's (LF)."""
    text, passes = rewritten
    final = text
    for edits in passes:
        final = apply_edits(final, edits)
    for breaks, old, new in ((LineBreaks.UNIVERSAL, text.splitlines(True), final.splitlines(True)),
                             (LineBreaks.LF, _LINE.findall(text.encode()), _LINE.findall(final.encode()))):
        blocks = changed_lines(text, final, passes, breaks)
        old_at = new_at = 0
        for block in blocks + [LineBlock(len(old), len(old), len(new), len(new))]:
            assert old[old_at : block.old_start] == new[new_at : block.new_start]
            old_at, new_at = block.old_end, block.new_end
        assert (old_at, new_at) == (len(old), len(new))


# -- files as they come: line endings, encodings, the ends of the file --------------------------


def git_applies(tmp_path: Path, old: bytes, new: bytes, patch: bytes) -> bool:
    """Whether `git apply` takes PATCH on a file holding OLD and leaves NEW."""
    (tmp_path / "f.py").write_bytes(old)
    (tmp_path / "p.diff").write_bytes(patch)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    applied = subprocess.run(["git", "-C", str(tmp_path), "apply", "p.diff"], capture_output=True)
    return applied.returncode == 0 and (tmp_path / "f.py").read_bytes() == new


TWENTY = "".join(f"line{n}\n" for n in range(20))
CASES = {
    "CRLF line endings": (TWENTY.replace("\n", "\r\n"), lambda t: [Edit(t.index("line7"), t.index("line7") + 5, "seven")]),
    "no newline at the end, edited": (TWENTY.rstrip("\n"), lambda t: [Edit(len(t) - 2, len(t), "last")]),
    "no newline at the end, added": (TWENTY.rstrip("\n"), lambda t: [Edit(len(t), len(t), "\n")]),
    "no newline at the end, removed": (TWENTY, lambda t: [Edit(len(t) - 1, len(t), "")]),
    "a line inserted at the start": (TWENTY, lambda t: [Edit(0, 0, "import torch\n")]),
    "a line inserted at the end": (TWENTY, lambda t: [Edit(len(t), len(t), "tail\n")]),
    "a copy of the first line inserted before it": (TWENTY, lambda t: [Edit(0, 0, "line0\n")]),
    "a copy of the last line inserted after it": (TWENTY, lambda t: [Edit(len(t), len(t), "line19\n")]),
    "the first line deleted": (TWENTY, lambda t: [Edit(0, t.index("line1"), "")]),
    "changes 6 lines apart share a hunk": (TWENTY, lambda t: [Edit(t.index("line5"), t.index("line5"), "x"),
                                                           Edit(t.index("line12"), t.index("line12"), "y")]),
    "changes 7 lines apart get a hunk each": (TWENTY, lambda t: [Edit(t.index("line5"), t.index("line5"), "x"),
                                                             Edit(t.index("line13"), t.index("line13"), "y")]),
    "a change in a blank-line run": ("a\n" + "\n" * 9 + "b\n", lambda t: [Edit(5, 5, "\n")]),
}


@pytest.mark.parametrize("case", CASES)
def test_files_as_they_come_get_difflibs_patch_and_git_applies_it(case, tmp_path):
    text, edits = CASES[case]
    change = rewrite(text, [edits(text)])
    patch = file_diff(change)
    assert patch == difflib_file_diff("f.py", change.old, change.new)
    assert git_applies(tmp_path, change.old, change.new, patch)


@pytest.mark.parametrize("encoding, bom", [("utf-8", True), ("latin-1", False)])
def test_a_bom_or_a_latin_1_file_keeps_its_bytes_in_the_patch(encoding, bom, tmp_path):
    text = "# -*- coding: latin-1 -*-\n" * (encoding == "latin-1") + "s = 'café'\nx = torch.zeros(3)\nx.fill_(1)\n"
    at = text.index("zeros")
    change = rewrite(text, [[Edit(at, at + 5, "empty")]], encoding, bom)
    patch = file_diff(change)
    assert patch == difflib_file_diff("f.py", change.old, change.new)
    assert b"-x = torch.zeros(3)\n+x = torch.empty(3)\n" in patch
    assert git_applies(tmp_path, change.old, change.new, patch)


def test_a_second_pass_that_rewrites_what_the_first_wrote_is_one_change():
    """OPT202 over OPT201's edit: the patch shows the final text only, as a diff of the two files does."""
    text = TWENTY
    first = [Edit(text.index("line4"), text.index("line4") + 5, "int v[n];\nuse(v.data());")]
    middle = apply_edits(text, first)
    second = [Edit(middle.index("v.data()"), middle.index("v.data()") + 8, "v.data() + 1")]
    change = rewrite(text, [first, second])
    assert change.blocks == (LineBlock(4, 5, 4, 6),)
    assert file_diff(change) == difflib_file_diff("f.py", change.old, change.new)


def test_write_patch_orders_files_by_path_and_leaves_out_unchanged_ones():
    one, two = rewrite("a\n", [[Edit(0, 1, "b")]]), rewrite("c\n", [[Edit(0, 1, "d")]])
    changes = [FileChange("z.py", two.old, two.new, two.blocks), FileChange("a.py", one.old, one.new, one.blocks),
               FileChange("same.py", b"x\n", b"x\n", ())]
    patch = write_patch(changes)
    assert [line for line in patch.split(b"\n") if line.startswith(b"diff")] == [
        b"diff --git a/a.py b/a.py", b"diff --git a/z.py b/z.py"]


# -- positions across passes --------------------------------------------------------------------


def offset_before_by_scan(offset: int, edits: list[Edit]) -> int:
    """The map PassEdits.before replaced: a scan of every edit."""
    delta = 0
    for edit in sorted(edits):
        start = edit.start + delta
        if offset < start:
            break
        if offset < start + len(edit.text):
            return edit.start
        delta += len(edit.text) - (edit.end - edit.start)
    return offset - delta


def offset_after_by_scan(offset: int, edits: list[Edit]) -> int:
    delta = 0
    for edit in sorted(edits):
        if offset < edit.start:
            break
        if offset < edit.end:
            return edit.start + delta
        delta += len(edit.text) - (edit.end - edit.start)
    return offset + delta


@given(dense_rewrites())
def test_offsets_map_across_a_pass_as_a_scan_of_its_edits_does(rewritten):
    text, passes = rewritten
    for edits in passes:
        after = apply_edits(text, edits)
        mapped = PassEdits(edits)
        assert [mapped.before(o) for o in range(len(after) + 1)] == [offset_before_by_scan(o, edits) for o in range(len(after) + 1)]
        assert [mapped.after(o) for o in range(len(text) + 1)] == [offset_after_by_scan(o, edits) for o in range(len(text) + 1)]
        text = after


@given(dense_rewrites())
def test_composed_spans_rewrite_the_original_into_the_final_text(rewritten):
    text, passes = rewritten
    final = text
    for edits in passes:
        final = apply_edits(final, edits)
    spans = composed_spans(passes)
    assert final == apply_edits(text, [Edit(s.old_start, s.old_end, final[s.new_start : s.new_end]) for s in spans])
    assert all(a.old_end < b.old_start and a.new_end < b.new_start for a, b in zip(spans, spans[1:]))


def relocated_by_difflib(findings: list[Finding], original: SourceFile, final_text: str, passes) -> list[Finding]:
    """The regions relocate_to_original gave with a whole-file difflib (its code before line_diff.py); every
    finding is an accepted fix."""
    old_lines, new_lines = original.text.splitlines(keepends=True), final_text.splitlines(keepends=True)
    touched = []
    for finding in findings:
        for edit in finding.fix.edits:
            offset = edit.start
            for edits in reversed(passes[: finding.analysis_pass]):
                offset = offset_before_by_scan(offset, edits)
            touched.append((finding.analysis_pass, original.position(offset)[0], finding))
    owners: dict[int, list[Region]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        pieces = [(i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1)] if tag == "replace" and i2 - i1 == j2 - j1 else [(i1, i2, j1, j2)]
        for p1, p2, q1, q2 in pieces if tag != "equal" else ():
            lines = range(p1 + 1, p2 + 1) if p2 > p1 else range(p1, p1 + 2)
            claimants = [(step, finding) for step, line, finding in touched if line in lines]
            if claimants:
                owner = max(claimants, key=lambda c: (c[0], c[1].sort_key))[1]
                owners.setdefault(id(owner), []).append(Region(p1 + 1, 1, p2 + 1, 1, "".join(new_lines[q1:q2])))
    return [replace(finding, regions=tuple(owners.get(id(finding), ()))) for finding in findings]


def fixes_of(passes: list[list[Edit]]) -> list[Finding]:
    """One fix per edit, found in the pass that applied it."""
    return [
        Finding(code="OPT999", name="test", path="f.py", line=1, col=number + 1, verdict=Verdict.FIX, reason="r",
                context=Context.ONCE, impact=Impact.LOW, impact_basis="b", fix=Fix(tier=Tier.SAFE, edits=(edit,)),
                analysis_pass=step)
        for step, edits in enumerate(passes) for number, edit in enumerate(edits)
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(sparse_rewrites(two_passes=True))
def test_regions_of_fixes_over_several_passes_are_those_difflib_gave(rewritten):
    text, passes = rewritten
    final = text
    for edits in passes:
        final = apply_edits(final, edits)
    original = SourceFile("f.py", Path("f.py"), text.encode(), text, "utf-8", False, "python")
    accepted = [Decided(finding, Decision(accepted=True)) for finding in fixes_of(passes)]
    found = relocate_to_original(accepted, original, final, passes)
    expected = relocated_by_difflib(fixes_of(passes), original, final, passes)
    assert [f.regions for f, _ in found] == [f.regions for f in expected]
