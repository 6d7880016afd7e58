"""Spans name the file's own characters even where libcst's code is not the file.

libcst's tree cannot hold a form feed in an indentation (CPython reads it as
a column reset, as old Emacs page breaks use it): its code leaves it out or
copies it to the next lines of the block. A last line of blanks after an
empty line, or a lone CR at the very end, loses a line ending. Offsets counted on that code fell one short of their character
after such a line, and OPT101 rewrote `torch.zeros(3)` into
`torchemptys(3)`, which still parses (found by the mutated-input campaign).
"""

from __future__ import annotations

import libcst as cst
import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.python_frontend import PythonModule, _TextLost, source_offsets, walk
from optpatch.rule import load_rules
from optpatch.source import read_source

FIXABLE = "def f(y):\n    x = torch.zeros(3)\n    x.copy_(y)\n    return x\n"

FILES = {
    "form_feed_before_a_statement": "import torch\n\n\f" + FIXABLE,
    "form_feed_before_an_import": "import os\n\fimport torch\n" + FIXABLE,
    "form_feed_in_a_block_indentation": "import torch\ndef f(y):\n  \f    x = torch.zeros(3)\n\f    x.copy_(y)\n    return x\n",
    "form_feed_without_a_final_newline": "import torch\n\f" + FIXABLE.rstrip("\n"),
    "lone_carriage_return_at_the_end": "import torch\n" + FIXABLE + "\r",
    "blanks_after_an_empty_last_line": "import torch\n" + FIXABLE + "\n  ",
}


def without_blanks(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_span_holds_the_code_of_its_node(tmp_path, name):
    path = tmp_path / "m.py"
    path.write_bytes(FILES[name].encode())
    module = PythonModule(read_source(path, "m.py"))
    assert module.tree.code != FILES[name]  # the case under test: libcst's code differs from the file
    empty = cst.Module(body=[])
    checked = 0
    for node in walk(module.tree):
        if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Integer)):
            assert without_blanks(module.text(node)) == without_blanks(empty.code_for_node(node)), node
            checked += 1
    assert checked > 10


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_rewrite_changes_only_the_call_and_keeps_the_whitespace(tmp_path, name):
    data = FILES[name].encode()
    path = tmp_path / "m.py"
    path.write_bytes(data)
    result = analyse_file(read_source(path, "m.py"), load_rules(), Settings(), FixPolicy())
    assert result.error is None, result.error
    assert result.new == data.replace(b"torch.zeros", b"torch.empty")


def test_offsets_move_over_whitespace_left_out_or_added():
    # "\f" left out before `b`, two spaces added before `c`.
    generated, text = "a\nb\n  c\n", "a\n\fb\nc\n"
    offsets = source_offsets(generated, text)
    assert len(offsets) == len(generated) + 1
    for offset, character in enumerate(generated):
        if not character.isspace():
            assert text[offsets[offset]] == character
    assert offsets[len(generated)] == len(text)


def test_code_that_differs_in_more_than_whitespace_is_refused_where_it_differs():
    with pytest.raises(_TextLost) as lost:
        source_offsets("x = 2\n", "x = 1\n")
    assert lost.value.offset == 4
    with pytest.raises(_TextLost):
        source_offsets("x = 1\n", "x = 1\ny\n")
