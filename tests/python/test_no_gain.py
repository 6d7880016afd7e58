"""Edits that gain nothing are advice or keeps, never fixes (analysis/no_gain.py; issue 28, point 4).

Each case is paired with its nearest live twin, which stays a fix: the
analysis must not take a value that is read for a dead one.
"""

from __future__ import annotations

import pytest

from optpatch.config import Settings
from optpatch.model import CodeArea, KeepCategory, Verdict
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

HEAD = "import torch\n\n\n"


def _verdicts(body: str, codes: tuple[str, ...], rel: str = "m.py") -> list[tuple[str, Verdict, KeepCategory | None]]:
    text = HEAD + body
    source = SourceFile(rel, None, text.encode(), text, "utf-8", False, "python")
    policy = FixPolicy(fix_areas=frozenset(CodeArea))
    result = analyse_file(source, select_rules(load_rules(), codes), Settings(), policy)
    assert result.error is None, result.error
    return [(f.code, f.verdict, f.keep_category) for f in result.findings if f.code in codes]


DEAD = (Verdict.ADVICE, KeepCategory.DEAD_STORE)


@pytest.mark.parametrize("body, code, expected", [
    # The shape: made, moved and converted, then assigned again before any read.
    ("def f(n, dt):\n    x = torch.empty(n).cuda().to(dt)\n    x = torch.ones(n, device='cuda')\n    return x\n",
     "OPT102", DEAD),
    ("def f(n, dt):\n    x = torch.empty(n).cuda().to(dt)\n    y = n + 1\n    x = torch.ones(y, device='cuda')\n    return x\n",
     "OPT102", DEAD),
    ("def f(ids: list[int]):\n    t = torch.tensor(ids).cuda()\n    t = torch.ones(3, device='cuda')\n    return t\n",
     "OPT103", DEAD),
    # Read before the second assignment, or by it.
    ("def f(n, dt):\n    x = torch.empty(n).cuda().to(dt)\n    x = x + 1\n    return x\n", "OPT102", (Verdict.FIX, None)),
    ("def f(n, dt):\n    x = torch.empty(n).cuda().to(dt)\n    print(x)\n    x = torch.ones(n)\n    return x\n",
     "OPT102", (Verdict.FIX, None)),
    # A handler, code after the loop, or a closure could still read the first value.
    ("def f(n, dt):\n    try:\n        x = torch.empty(n).cuda().to(dt)\n        x = g(n)\n    finally:\n"
     "        print(x)\n    return x\n", "OPT102", (Verdict.FIX, None)),
    ("def f(n, dt, c):\n    for i in range(n):\n        x = torch.empty(n).cuda().to(dt)\n        if c:\n            break\n"
     "        x = g(i)\n    return x\n", "OPT102", (Verdict.FIX, None)),
    ("def f(n, dt):\n    show = lambda: x\n    x = torch.empty(n).cuda().to(dt)\n    show()\n    x = g(n)\n    return x\n",
     "OPT102", (Verdict.FIX, None)),
])
def test_a_dead_store_is_advice_whatever_the_rule(body, code, expected):
    assert [(verdict, category) for _, verdict, category in _verdicts(body, (code,))] == [expected]


def test_a_move_to_the_device_the_tensor_is_created_on_is_advice():
    body = "def f(n):\n    return torch.zeros(n, device='cuda').cuda() + torch.ones(n, device='cuda:1').to('cuda:1')\n"
    assert _verdicts(body, ("OPT102",)) == [("OPT102", Verdict.ADVICE, None)] * 2
    other = "def f(n):\n    return torch.zeros(n, device='cuda:1').cuda() + 1\n"
    assert _verdicts(other, ("OPT102",)) == [("OPT102", Verdict.KEEP, KeepCategory.DEVICE_ALREADY_SET)]


NO_GAIN = ("OPT103", Verdict.KEEP, KeepCategory.NO_GAIN)


@pytest.mark.parametrize("body", [
    "def test_a(out):\n    assert torch.equal(out, torch.tensor([0, 2], device='cuda:0'))\n",
    "def f(ids: list[int]):\n    return int(torch.tensor(ids).cuda().sum())\n",
    "def f(ids: list[int], x):\n    return x[: torch.tensor(ids).cuda().sum()]\n",
    "def f(ids: list[int], x):\n    if torch.tensor(ids, device='cuda').any():\n        return x\n",
])
def test_opt103_leaves_a_copy_the_host_reads_back_at_once(body):
    assert _verdicts(body, ("OPT103",)) == [NO_GAIN]


def test_opt103_leaves_tiny_literal_constants_in_tests_only():
    body = "def f(out):\n    r = torch.tensor([1, 2, 3], device='cuda')\n    return r * out\n"
    assert _verdicts(body, ("OPT103",), rel="tests/test_m.py") == [NO_GAIN]
    assert _verdicts(body, ("OPT103",), rel="pkg/m.py") == [("OPT103", Verdict.FIX, None)]
    large = body.replace("[1, 2, 3]", "[1] * 17")
    assert _verdicts(large, ("OPT103",), rel="tests/test_m.py") == [("OPT103", Verdict.FIX, None)]
