"""A module-level name that an import binds and an assignment rebinds is not the import's.

`import torch` then `torch = np` gives `torch.zeros` two bindings that libcst
(and python_scope.py, which copies it) both call "torch.zeros"; the rules
must not take it for torch's. Each case is checked against the same module
without the rebinding, where the rule does fix the site: so the test fails
if the rebinding is ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.model import Verdict
from optpatch.rule import load_rules
from optpatch.source import SourceFile

RULES = {rule.code: rule for rule in load_rules()}

CASES = {
    "OPT101 through the module": (
        "OPT101", "import torch\nimport numpy as np\n{rebind}def f(n, y):\n    x = torch.zeros(n)\n    x[:] = y\n    return x\n",
    ),
    "OPT101 through `from torch import`": (
        "OPT101", "from torch import zeros\n{rebind}def f(n, y):\n    x = zeros(n)\n    x[:] = y\n    return x\n",
    ),
    "OPT102 factory": (
        "OPT102", "import torch\nimport numpy as np\n{rebind}def f(n, d: torch.device):\n    return torch.arange(n).to(d)\n",
    ),
}
REBINDINGS = {
    "OPT101 through the module": "torch = np\n",
    "OPT101 through `from torch import`": "zeros = lambda n: [0] * n\n",
    "OPT102 factory": "torch = np\n",
}


def _verdicts(code: str, text: str) -> list[Verdict]:
    source = SourceFile("m.py", Path("m.py"), text.encode(), text, "utf-8", False, "python")
    result = analyse_file(source, [RULES[code]], Settings(), FixPolicy(unsafe_fixes=True))
    assert result.error is None
    return [finding.verdict for finding in result.findings]


@pytest.mark.parametrize("case", list(CASES))
def test_a_rebound_name_is_not_the_import(case):
    code, template = CASES[case]
    assert _verdicts(code, template.format(rebind="")) == [Verdict.FIX]
    assert Verdict.FIX not in _verdicts(code, template.format(rebind=REBINDINGS[case]))
