"""OPT103's `ast` screen: what it lets through for `torch.tensor(data, device=d)` and the named sources.

Every `torch.tensor(..., device=d)` is a site unless `d` names the host (a
`d` known only by its name is `validate`, as in `torch.tensor(data).to(d)`),
so the screen passes every `device=` but a literal host (`"cpu"`, `None`); a
name bound to the host passes the screen and `check` finds no site there.
test_rule_screens.py checks the screen against every fixture; these are the
shapes that decide it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.python_screen import CallIndex
from optpatch.rule import load_rules
from optpatch.source import SourceFile

RULE = next(rule for rule in load_rules() if rule.code == "OPT103")
HEAD = "import torch\n\n"

# text -> whether it holds a site (and so must pass the screen), and whether the screen passes it when that differs
SHAPES = {
    "a CUDA string": ("def f(x: list[int]):\n    return torch.tensor(x, device='cuda:0') + 1\n", True),
    "an f-string": ("def f(x: list[int], i: int):\n    return torch.tensor(x, device=f'cuda:{i}') + 1\n", True),
    "torch.device": ("def f(x: list[int]):\n    return torch.tensor(x, device=torch.device('cuda', 1)) + 1\n", True),
    "a module constant in an if": (
        "if True:\n    DEV = 'cuda'\n\ndef f(x: list[int]):\n    return torch.tensor(x, device=DEV) + 1\n", True),
    "a local name": ("def f(x: list[int]):\n    d = torch.device('cuda')\n    return torch.tensor(x, device=d) + 1\n", True),
    "a name bound to a name": (
        "BASE = 'cuda'\nDEV = BASE\n\ndef f(x: list[int]):\n    return torch.tensor(x, device=DEV) + 1\n", True),
    "a parameter": ("def f(x: list[int], device):\n    return torch.tensor(x, device=device) + 1\n", True),
    "an annotated parameter": (
        "def f(x: list[int], device: torch.device):\n    return torch.tensor(x, device=device) + 1\n", True),
    "an attribute": ("def f(self, x: list[int]):\n    return torch.tensor(x, device=self.device) + 1\n", True),
    "a project function": (
        "def dev():\n    return torch.device('cuda')\n\ndef f(x: list[int]):\n    return torch.tensor(x).to(dev()) + 1\n",
        True),
    "the host": ("def f(x: list[int]):\n    return torch.tensor(x, device='cpu') + 1\n", False),
    "a name bound to the host": (
        "DEV = 'cpu'\n\ndef f(x: list[int]):\n    return torch.tensor(x, device=DEV) + 1\n", False, True),
    "a named source": ("def f(x: list[int]):\n    t = torch.tensor(x)\n    t[0] = 1\n    return t.cuda().sum()\n", True),
    "a name bound to another torch call": (
        "def f(a, b):\n    t = torch.cat([a, b])\n    return t.cuda().sum()\n", False),
}


def _findings(text: str) -> list[tuple]:
    source = SourceFile("m.py", Path("m.py"), text.encode(), text, "utf-8", False, "python")
    result = analyse_file(source, [RULE], Settings(), FixPolicy())
    return [(f.line, f.verdict, f.fix and f.fix.tier) for f in result.findings]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.replace(" ", "-"))
def test_the_screen_passes_every_site_and_rejects_what_holds_none(shape, monkeypatch):
    body, has_site, *passes = SHAPES[shape]
    text = HEAD + body
    screened = RULE.screen(CallIndex.of(text))
    found = _findings(text)
    monkeypatch.setattr(RULE, "screen", classmethod(lambda cls, calls: True))
    assert _findings(text) == found
    assert bool(found) == has_site
    assert screened is (passes[0] if passes else has_site)
