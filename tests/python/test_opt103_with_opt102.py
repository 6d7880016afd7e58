"""OPT102 and OPT103 look at the same moves: together, every site gets what one of them alone promises.

OPT102 creates on the device what needs no host data (`torch.zeros(n).cuda()`);
OPT103 pins and copies asynchronously what does (`torch.tensor(list).cuda()`).
A site never gets both rules' edits: the planner takes fixes by position, then
code, holds back one that overlaps, and the next pass re-derives it from the
rewritten text, where the other rule's result is kept as deliberate (a
`pin_memory` copy) or is no longer a copy at all (`device=`). Each form below
is run with each rule alone and with both, under the default policy and with
every fix accepted, in both rule orders.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy, fix_id
from optpatch.rule import load_rules
from optpatch.source import SourceFile

RULES = {rule.code: rule for rule in load_rules()}
HEAD = "import numpy as np\nimport torch\n\nDEV = torch.device('cuda')\n\n\n"

# form -> (the function's text, the rule whose fix it gets under the default policy, or None for neither)
FORMS = {
    "constant factory": ("def f(n: int):\n    return torch.zeros(n).cuda() + 1\n", "OPT102"),
    "range factory": ("def f(n: int):\n    return torch.arange(n).to(DEV) * 2\n", "OPT102"),
    "two statements": ("def f(n: int):\n    t = torch.ones(n)\n    t = t.to(DEV)\n    return t + 1\n", "OPT102"),
    "random factory": ("def f(n: int):\n    return torch.randn(n).cuda() + 1\n", None),
    "list": ("def f(ids: list[int]):\n    return torch.tensor(ids).cuda() + 1\n", "OPT103"),
    "list with a dtype": (
        "def f(ids: list[int]):\n    t = torch.tensor(ids, dtype=torch.long).to(DEV)\n    return t.sum()\n", "OPT103"),
    "as_tensor": ("def f(a: np.ndarray):\n    return torch.as_tensor(a).to(DEV) * 2\n", "OPT103"),
    "from_numpy": ("def f(a: np.ndarray):\n    return torch.from_numpy(a).to(DEV) * 2\n", "OPT103"),
    "tensor with device=": ("def f(ids: list[int]):\n    return torch.tensor(ids, device=DEV) + 1\n", "OPT103"),
    "filled factory": (
        "def f(n: int):\n    t = torch.zeros(n)\n    t[0] = 1\n    return t.to(DEV) + 1\n", "OPT103"),
    "pinned": ("def f(x: torch.Tensor):\n    return x.pin_memory().to(DEV) + 1\n", "OPT103"),
    "pinned factory": (
        "def f(n: int, x: torch.Tensor):\n    b = torch.empty(n, pin_memory=True)\n    b.copy_(x)\n    return b.cuda() + 1\n",
        "OPT103"),
    "already asynchronous": (
        "def f(ids: list[int]):\n    return torch.tensor(ids, pin_memory=True).cuda(non_blocking=True) + 1\n", None),
}


def _run(text: str, codes: tuple[str, ...], accept_all: bool) -> str:
    source = SourceFile("m.py", Path("m.py"), text.encode(), text, "utf-8", False, "python")
    rules = [RULES[code] for code in codes]
    policy = FixPolicy()
    if accept_all:
        found = analyse_file(source, rules, Settings(), FixPolicy(unsafe_fixes=True))
        policy = FixPolicy(unsafe_fixes=True, validated=frozenset(fix_id(f) for f in found.findings if f.fix is not None))
    result = analyse_file(source, rules, Settings(), policy)
    assert result.error is None, result.error
    return result.new.decode() if result.new is not None else text


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.replace(" ", "-"))
def test_the_default_run_gives_each_form_to_its_rule(form):
    body, owner = FORMS[form]
    text = HEAD + body
    alone = {code: _run(text, (code,), accept_all=False) for code in ("OPT102", "OPT103")}
    together = _run(text, ("OPT102", "OPT103"), accept_all=False)
    assert together == _run(text, ("OPT103", "OPT102"), accept_all=False)
    expected = alone[owner] if owner else text
    assert together == expected
    if owner:
        other = "OPT102" if owner == "OPT103" else "OPT103"
        assert alone[other] == text, f"{other} also rewrites the {form} form"


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.replace(" ", "-"))
def test_with_every_fix_accepted_a_site_still_gets_one_rules_edits(form):
    """With validated and unsafe fixes too (OPT102 has a validate-tier `from_numpy` rewrite), the result is one
    rule's alone, and a second run of both rules changes nothing."""
    text = HEAD + FORMS[form][0]
    alone = {_run(text, (code,), accept_all=True) for code in ("OPT102", "OPT103")}
    together = _run(text, ("OPT102", "OPT103"), accept_all=True)
    assert together == _run(text, ("OPT103", "OPT102"), accept_all=True)
    assert together in alone | {text}
    assert _run(together, ("OPT102", "OPT103"), accept_all=True) == together


def test_the_forms_exercise_both_rules():
    owners = [owner for _, owner in FORMS.values()]
    assert owners.count("OPT102") >= 3 and owners.count("OPT103") >= 6 and None in owners
