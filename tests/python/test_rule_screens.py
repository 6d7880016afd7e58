"""A rule's `screen` may reject a file only where `check` would find nothing there.

Each Python rule that overrides `screen` is run over every Python fixture,
example and rule example twice, with and without its screen: the findings
must be the same. And the screen must really reject something, or it only
costs an `ast` parse.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.python_screen import CallIndex
from optpatch.rule import Rule, load_rules
from optpatch.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]
SCREENED = [rule for rule in load_rules() if rule.language == "python" and rule.screen.__func__ is not Rule.screen.__func__]


def _texts() -> list[tuple[str, str]]:
    paths = sorted((ROOT / "tests/fixtures/python").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]
    for rule in load_rules():
        if rule.language == "python":
            found += [(f"{rule.code}-valid-{i}.py", text) for i, text in enumerate(rule.VALID)]
            found += [(f"{rule.code}-invalid-{i}.py", example.code) for i, example in enumerate(rule.INVALID)]
    return found


# Beyond the fixtures: bindings a screen must read as the check does. python_scope names what an assignment binds
# as it is spelled, so `torch.zeros` on `torch = pytest.importorskip("torch")` is torch's (a common test preamble).
RESOLUTION = [
    ("assigned_torch.py", "import pytest\ntorch = pytest.importorskip('torch')\n"
     "def f(n):\n    x = torch.zeros(n).cuda()\n    y = torch.arange(n)\n    y = y.to('cuda')\n"
     "    z = torch.tensor([1, 2]).to('cuda')\n    w = torch.zeros(n)\n    w.fill_(1)\n    return x, y, z, w\n"),
    # Each binding below, with every rule's sites after it: a screen must not drop what the check judges there.
    *[(f"binding_{i}.py", head + "def sites(n):\n    x = {0}.zeros(n).cuda()\n    y = {0}.tensor([1, 2]).to('cuda')\n"
       "    w = {0}.zeros(n)\n    w.fill_(1)\n    return x, y, w\n".format(name)) for i, (head, name) in enumerate([
        ("def outer(torch):\n    return torch\n", "torch"),  # a parameter named torch, elsewhere
        ("import torch as th\n", "th"),
        ("from torch import *\n", "torch"),
        ("import importlib\nclass Lazy:\n    torch = importlib.import_module('torch')\n", "torch"),
        ("try:\n    import torch\nexcept ImportError:\n    torch = None\n", "torch"),
        ("import importlib\nif (torch := importlib.import_module('torch')) is None:\n    pass\n", "torch"),
    ])],
]
TEXTS = _texts() + RESOLUTION


def _findings(rule: type[Rule], name: str, text: str) -> list[tuple]:
    source = SourceFile(name, Path(name), text.encode(), text, "utf-8", False, "python")
    result = analyse_file(source, [rule], Settings(), FixPolicy())
    return [(f.line, f.col, f.verdict, f.fix and f.fix.tier, f.reason) for f in result.findings]


def test_some_rule_screens():
    assert SCREENED, "no Python rule overrides `screen`: this test would check nothing"


@pytest.mark.parametrize("rule", SCREENED, ids=lambda rule: rule.code)
def test_screen_rejects_only_files_without_findings(rule, monkeypatch):
    screened = {name: _findings(rule, name, text) for name, text in TEXTS if rule.wants(_as_source(name, text))}
    monkeypatch.setattr(rule, "screen", classmethod(lambda cls, calls: True))
    monkeypatch.setattr(rule, "needs", Rule.needs)  # and no outline: a screen is often `bool(needs)`
    unscreened = {name: _findings(rule, name, text) for name in screened for text in [dict(TEXTS)[name]]}
    assert screened == unscreened
    assert any(unscreened.values()), "no fixture has a finding of this rule"


@pytest.mark.parametrize("rule", SCREENED, ids=lambda rule: rule.code)
def test_screen_rejects_a_file_with_only_trigger_words(rule):
    # Trigger words in an unrelated call, a comment and a string: nothing to parse with libcst.
    text = (
        "import torch\nfrom .utils import helper\n# x.to(device) x.cuda() torch.zeros(n)\ns = 'a.to(b) zeros'\n"
        "y = helper.to(3)\nz = obj.cuda()\nzeros = helper.zeros_count\n"
    )
    calls = CallIndex.of(text)
    assert rule.wants(_as_source("m.py", text))
    assert not rule.screen(calls)


def _as_source(name: str, text: str) -> SourceFile:
    return SourceFile(name, Path(name), text.encode(), text, "utf-8", False, "python")


def _screened(code: str) -> type[Rule]:
    (rule,) = [rule for rule in SCREENED if rule.code == code]
    return rule


def _rejected(rule: type[Rule], text: str) -> bool:
    """The file has the rule's trigger words (so the screen is asked), and the screen rejects it."""
    assert rule.wants(_as_source("screened.py", text)), "no trigger word: the screen would not be asked"
    return not rule.screen(CallIndex.of(text))


def _kept_with_findings(rule: type[Rule], text: str) -> bool:
    """The screen keeps the file, and the check finds something in it."""
    return rule.screen(CallIndex.of(text)) and bool(_findings(rule, "kept.py", text))


def test_the_opt102_screen_keeps_a_two_statement_move_from_an_annotated_assignment():
    text = "import torch\ndef f(n, d):\n    t: torch.Tensor = torch.arange(n)\n    t = t.to(d)\n    return t\n"
    assert _kept_with_findings(_screened("OPT102"), text)


# What a screen rejects because its check never judges it, and what it must keep: (rule, a rejected file, the
# lines that, added to it, make files the screen keeps and the check finds something in).
# OPT101: a Triton kernel's `tl.zeros`, NumPy's, a parameter's and a local alias's; allocation_kind resolves a
# function through the module's imports of torch only. Kept: torch's `zeros`, through an alias, a tensor's
# `new_zeros` (a name assigned and spelled `torch` is in RESOLUTION above).
# OPT102: a module moved to the device (`chained` and `two_statement` judge no capitalised torch class but the legacy
# tensor types). Kept: a legacy tensor type, and a class imported under another name (not read by its spelling).
NEVER_JUDGED = [
    ("OPT101",
     "import numpy as np\nimport triton.language as tl\nimport torch\nfrom torch import zeros as Z\nT = torch\n"
     "def kernel(n):\n    acc = tl.zeros((n,), dtype=tl.float32)\n    acc += 1\n    return acc\n"
     "def host(xp, n):\n    a = np.zeros(n)\n    a.fill(1)\n    b = xp.zeros(n)\n    b.fill_(1)\n"
     "    c = T.zeros(n)\n    c.fill_(1)\n    return a, b, c\n",
     ["def more(acc, n):\n    d = torch.zeros(n)\n    d.fill_(1)\n    return d\n",
      "def more(acc, n):\n    d = Z(n)\n    d.fill_(1)\n    return d\n",
      "def more(acc, n):\n    d = acc.new_zeros(n)\n    d.fill_(1)\n    return d\n"]),
    ("OPT102",
     "import torch\nfrom torch import nn\nfrom torch import LongTensor as LT\n"
     "def build(d):\n    net = nn.Sequential(nn.Linear(2, 2)).cuda()\n    head = torch.nn.Linear(2, 2).to(d)\n"
     "    norm = nn.LayerNorm(2)\n    norm = norm.to(d)\n    return net, head, norm\n",
     ["def ids():\n    ids = torch.LongTensor([1, 2]).cuda()\n    return ids\n",
      "def ids():\n    ids = LT([1, 2]).cuda()\n    return ids\n"]),
]


@pytest.mark.parametrize("code, rejected, additions", NEVER_JUDGED, ids=[row[0] for row in NEVER_JUDGED])
def test_a_screen_rejects_what_its_check_never_judges_and_keeps_its_sites(code, rejected, additions):
    rule = _screened(code)
    assert _rejected(rule, rejected)
    for addition in additions:
        assert _kept_with_findings(rule, rejected + addition), addition


def test_the_opt102_screen_reads_a_two_statement_move_in_the_function_of_its_factory():
    # `check` finds `t = F(...)` in the block of `t = t.to(d)`: an assignment in another function is no site.
    elsewhere = (
        "import torch\ndef make(n):\n    latents = torch.randn(n)\n    return latents\n"
        "def prepare(latents, d):\n    latents = latents.to(d)\n    return latents\n"
    )
    rule = _screened("OPT102")
    assert _rejected(rule, elsewhere)
    # In one function, but another block: the assignment in a branch, the move after it.
    branch = elsewhere + "def branch(n, d, b):\n    if b:\n        latents = torch.randn(n)\n    latents = latents.to(d)\n    return latents\n"
    assert _rejected(rule, branch) and not _findings(rule, "branch.py", branch)
    together = elsewhere + "def both(n, d):\n    latents = torch.randn(n)\n    latents = latents.to(d)\n    return latents\n"
    assert rule.screen(CallIndex.of(together))
    assert [line for line, *_ in _findings(rule, "together.py", together)] == [9]  # the factory's line
