"""Every edit keeps the line limit (line_limits.py): the formatter's where one is configured, else the file's longest line.

The issue's cases: with no formatter, OPT103 wrote lines of 120 and 140
columns in files whose longest line was 111 or less; under yapf with
`column_limit = 79` it wrote a 95-column line. Now the keywords go on a
line of their own where that fits, and the site is kept where nothing does
(`KeepCategory.CANNOT_SPELL`), for every rule.
"""

from __future__ import annotations

from optpatch.config import Settings
from optpatch.formatter_config import PythonFormatter, PythonStyle
from optpatch.line_limits import LineLimit, line_limit, overlong_line
from optpatch.model import Edit, KeepCategory, Verdict
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.python_layout import width
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

HEAD = "import torch\n\n\ndef step(self, ids: list[int], lens: list[int], positions: list[int]):\n"
LONGEST = "    # " + "-" * 105 + "\n"  # 111 columns: the file's longest line


def _analyse(text: str, style: PythonStyle = PythonStyle(), codes=("OPT103",)):
    source = SourceFile("m.py", None, text.encode(), text, "utf-8", False, "python")
    result = analyse_file(source, select_rules(load_rules(), codes), Settings(), FixPolicy(), style=style)
    assert result.error is None, result.error
    return result


def _widest(result) -> int:
    return max(width(line) for line in result.new.decode().splitlines())


def test_without_a_formatter_opt103_keeps_within_the_files_longest_line():
    # Before: `..., pin_memory=True).cuda(non_blocking=True) * lens_scale` made this a line of 128 columns.
    statement = "    self.input_ids = torch.tensor(ids, dtype=torch.long, requires_grad=False).cuda() * self.lens_scale_factor\n"
    assert len(statement) - 1 < 111
    result = _analyse(HEAD + LONGEST + statement + "    return self.input_ids\n")
    fixes = [f for f in result.findings if f.verdict is Verdict.FIX]
    assert fixes and result.new is not None
    assert _widest(result) <= 111


def test_a_site_no_layout_fits_is_kept_and_says_why():
    # `torch.tensor(data, device=d)` gains `.to(d, non_blocking=True)` at its end: no line of its own for that.
    statement = "    out = torch.tensor(positions, dtype=torch.int32, device='cuda:0') * torch.ones(1, device='cuda:0')\n"
    result = _analyse(HEAD + LONGEST + statement + "    return out\n")
    (finding,) = [f for f in result.findings if f.line == 6]
    assert (finding.verdict, finding.keep_category) == (Verdict.KEEP, KeepCategory.CANNOT_SPELL)
    assert "past the line limit of 111" in finding.reason and result.new is None


def test_under_yapf_an_edit_keeps_its_column_limit():
    # Before: a 95-column line under yapf's `column_limit = 79`.
    statement = "    positions_tensor = torch.tensor(positions, dtype=torch.long).to('cuda:0')\n"
    yapf = PythonStyle(PythonFormatter.YAPF, 79)
    result = _analyse(HEAD + statement + "    return positions_tensor.sum()\n", yapf)
    assert result.new is not None and _widest(result) <= 79
    assert "pin_memory=True" in result.new.decode() and "non_blocking=True" in result.new.decode()


def test_the_limit_and_the_lines_an_edit_writes():
    text = "x = f(a)\n" + "y" * 90 + "\n"
    assert line_limit(PythonStyle(), text) == LineLimit(90, "the file's longest line; no formatter is configured")
    assert line_limit(PythonStyle(), "x = 1\n").columns == 79
    assert line_limit(PythonStyle(PythonFormatter.BLACK, 88), text).columns == 88
    limit = LineLimit(10, "a test's")
    assert overlong_line("x = f(a)\n", [Edit(7, 7, ", b=1")], limit).width == 13
    # Two insertions into one line are judged together; a line that shrinks or keeps its length is allowed.
    assert overlong_line("f(aaaa, b)\n", [Edit(1, 1, "x"), Edit(9, 9, "y")], limit).width == 12
    assert overlong_line("f(aaaa, bbb)\n", [Edit(2, 6, "a")], limit) is None


def test_a_site_kept_for_the_limit_beside_a_fix_that_makes_room_is_fixed_in_the_same_run():
    # The mutation campaign found it: the `arange` fix splits the line, after which the `ones` fix fits; the
    # `ones` site was kept in the first run and fixed by a second, so the patch was not idempotent.
    text = (
        "import torch\n\nDEVICE = torch.device('cuda')\n" + "# " + "-" * 97 + "\n\n\n"
        "def nested(n):\n"
        "    joined = torch.cat([torch.ones(n).to(DEVICE), torch.arange(n, dtype=torch.float32).to(DEVICE)])\n"
        "    return joined\n"
    )
    first = _analyse(text, codes=("OPT102",))
    assert [f.verdict for f in first.findings if f.line == 8] == [Verdict.FIX, Verdict.FIX]
    rewritten = first.new.decode()
    assert _analyse(rewritten, codes=("OPT102",)).new is None
    assert _widest(first) <= 99
