"""python_edits: what an edit looks like where python_layout does not lay the statement out.

No formatter, yapf, a file its formatter would reformat anyway, or a
statement outside python_layout's subset: the edit keeps the statement's
own layout, within the line limit. Also the quotes of written literals and
the place of an added import name. (test_formatter_shapes.py holds the
edits to the real formatters; these pin the rules of the other cases.)
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.formatter_config import PythonFormatter, PythonStyle, Quotes
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.python_edits import quote_counts
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

NONE = PythonStyle()
BLACK = PythonStyle(PythonFormatter.BLACK, 88, Quotes.DOUBLE)
YAPF = PythonStyle(PythonFormatter.YAPF, 60)


def _rewrite(text: str, style: PythonStyle, codes=("OPT102",)) -> str:
    source = SourceFile("m.py", None, text.encode(), text, "utf-8", False, "python")
    result = analyse_file(source, select_rules(load_rules(), codes), Settings(), FixPolicy(), style=style)
    assert result.error is None, result.error
    assert result.new is not None, [f.reason for f in result.findings]
    return result.new.decode()


HEAD = "import torch\n\n\ndef f(n, device: torch.device):\n"


def test_without_a_formatter_a_line_stays_within_the_files_own_longest(tmp_path):
    longest = "    # " + "x" * 90 + "\n"
    fits = HEAD + longest + "    return torch.ones(n, 4).to(device)\n"
    assert _rewrite(fits, NONE) == HEAD + longest + "    return torch.ones(n, 4, device=device)\n"
    too_long = HEAD + "    return torch.ones(first_dimension, second_dimension, third_dimension).to(device)\n"
    assert _rewrite(too_long, NONE) == HEAD + (
        "    return torch.ones(first_dimension, second_dimension, third_dimension,\n"
        "                      device=device)\n"
    )


def test_without_a_formatter_an_exploded_call_with_a_trailing_comma_gains_a_line():
    text = HEAD + "    return torch.ones(\n        n,\n        4,\n    ).to(device)\n"
    assert _rewrite(text, NONE) == HEAD + "    return torch.ones(\n        n,\n        4,\n        device=device,\n    )\n"


def test_a_comment_after_the_last_argument_stays_with_it():
    text = HEAD + "    return torch.ones(\n        n,\n        4,  # columns\n    ).to(device)\n"
    expected = HEAD + "    return torch.ones(\n        n,\n        4,  # columns\n        device=device,\n    )\n"
    assert _rewrite(text, NONE) == expected
    assert _rewrite(text, BLACK) == expected


def test_yapf_puts_a_keyword_of_a_split_argument_list_on_its_own_line():
    text = HEAD + "    return torch.zeros(n,\n                       4).to(device)\n"
    assert _rewrite(text, YAPF) == HEAD + "    return torch.zeros(n,\n                       4,\n                       device=device)\n"


def test_yapf_without_split_before_named_assigns_keeps_a_keyword_for_a_split_argument_list():
    """yapf then packs the call's arguments again as its costs choose (pytorch_geometric's git_mol.py: `dtype=` moved
    up to the first line once `device=` joined it), which optpatch does not reproduce: the site is kept."""
    text = HEAD + "    return torch.zeros(n,\n                       4).to(device)\n"
    style = PythonStyle(PythonFormatter.YAPF, 60, yapf_splits_before_keywords=False)
    source = SourceFile("m.py", None, text.encode(), text, "utf-8", False, "python")
    result = analyse_file(source, select_rules(load_rules(), ("OPT102",)), Settings(), FixPolicy(), style=style)
    (finding,) = result.findings
    assert finding.verdict.value == "keep" and "split_before_named_assigns" in finding.reason, finding.reason
    # On one line, the keyword joins it as before.
    assert _rewrite(HEAD + "    return torch.zeros(n, 4).to(device)\n", style) == (
        HEAD + "    return torch.zeros(n, 4, device=device)\n")


def test_a_statement_black_would_reformat_anyway_keeps_its_layout():
    text = HEAD + "    return torch.ones( n,4 ).to(device)\n"
    assert _rewrite(text, BLACK) == HEAD + "    return torch.ones( n,4, device=device )\n"


def test_a_statement_python_layout_refuses_keeps_its_layout():
    text = HEAD + "    return sorted(torch.arange(n).to(device).tolist(), key=lambda v: -v)\n"
    assert _rewrite(text, BLACK) == HEAD + "    return sorted(torch.arange(n, device=device).tolist(), key=lambda v: -v)\n"


@pytest.mark.parametrize("quotes, literal", [(Quotes.DOUBLE, '"cuda"'), (Quotes.SINGLE, "'cuda'")])
def test_a_literal_takes_the_formatters_quotes(quotes, literal):
    text = "import torch\nx = 'a'\ny = 'b'\n\n\ndef f(n):\n    return torch.ones(n).cuda()\n"
    assert f"torch.ones(n, device={literal})" in _rewrite(text, PythonStyle(PythonFormatter.BLACK, 88, quotes))


@pytest.mark.parametrize("others, literal", [("'a', 'b'", "'cuda'"), ('"a", "b"', '"cuda"'), ("'a', \"b\"", '"cuda"')])
def test_where_quotes_are_kept_a_literal_takes_the_files_majority(others, literal):
    text = f"import torch\nnames = [{others}]\n\n\ndef f(n):\n    return torch.ones(n).cuda()\n"
    assert f"torch.ones(n, device={literal})" in _rewrite(text, NONE)


def _tokenize_quotes(text: str) -> dict[str, int]:
    """What `quote_counts` stands in for: tokenize's one-line string tokens that are not triple-quoted, by quote."""
    counts = {"'": 0, '"': 0}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING and "\n" not in token.string:
            quote = token.string.lstrip("rRbBuUfF")
            if not quote.startswith(quote[0] * 3):
                counts[quote[0]] += 1
    return counts


TRICKY_QUOTES = [
    "x = 'a'  # \"b\" \"c\"\n",  # quotes in a comment
    "s = '# \"not\" a comment'\nt = \"x\"\n",  # a comment mark in a string
    'doc = """\n\'a\' \'b\' \'c\'\n"""\nx = "a"\n',  # quotes in a multi-line string
    "x = \'\'\'one line\'\'\'\ny = \"a\"\n",  # a one-line triple-quoted string counts for neither
    "e = ''\nf = ''\ng = \"\"\n",  # empty strings
    "x = 'it\\'s'\ny = 'a'\nz = \"b\"\n",  # an escaped quote
    "x = r'\\'\ny = rb\"\\\\\"\nz = f'{a[\"k\"]}'\n",  # prefixes, a raw backslash, another quote inside
    "x = 'a\\\nb'\ny = \"c\"\n",  # a backslash-continued string spans two lines: it counts for neither
    "x = 'a\\\r\nb'\r\ny = \"c\"\r\n",  # the same with CRLF
]


@pytest.mark.parametrize("text", TRICKY_QUOTES)
def test_the_files_quotes_are_counted_as_tokenize_would(text):
    assert quote_counts(text) == _tokenize_quotes(text)


def test_the_files_quotes_are_counted_as_tokenize_would_on_optpatchs_own_code():
    root = Path(__file__).parents[2]
    texts = [path.read_text(encoding="utf-8") for folder in ("src", "rules", "tests", "benchmarks")
             for path in sorted((root / folder).rglob("*.py"))]
    assert len(texts) > 200
    assert [text[:60] for text in texts if quote_counts(text) != _tokenize_quotes(text)] == []


def test_an_import_name_goes_in_sorted_place_and_the_import_explodes_past_the_limit():
    imports = "from torch import arange, ones_like, randn, tensor, zeros\n"  # 57 characters: black's own
    text = f"import torch\n{imports}\n\ndef f(n, y):\n    x = zeros(n)\n    x.fill_(y)\n    return x\n"
    style = PythonStyle(PythonFormatter.BLACK, 60, Quotes.DOUBLE)
    assert _rewrite(text, style, ("OPT101",)).startswith(
        "import torch\nfrom torch import (\n    arange,\n    empty,\n    ones_like,\n    randn,\n    tensor,\n"
        "    zeros,\n)\n"
    )


def test_an_unsorted_import_gains_the_name_last():
    text = "from torch import zeros, arange\n\n\ndef f(n, y):\n    x = zeros(n)\n    x.fill_(y)\n    return x, arange(2)\n"
    assert _rewrite(text, NONE, ("OPT101",)).startswith("from torch import zeros, arange, empty\n")
