"""OPT101's impact class and basis follow the device and, where the call spells it, the size (issue 17, s4)."""

import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

TEMPLATE = "import torch\n\n\ndef step(src):\n    x = {allocation}\n    x.copy_(src)\n    return x\n"


def _impact(allocation: str, function: str = "step"):
    text = TEMPLATE.format(allocation=allocation).replace("def step", f"def {function}")
    source = SourceFile("m.py", None, text.encode(), text, "utf-8", False, "python")
    (finding,) = analyse_file(source, select_rules(load_rules(), ["OPT101"]), Settings(), FixPolicy()).findings
    assert finding.verdict.value == "fix"
    return finding.impact.value, finding.impact_basis


@pytest.mark.parametrize(
    "allocation, impact, measurement",
    [
        ("torch.zeros(1, device='cuda')", "low", "4 bytes"),
        ("torch.zeros((), dtype=torch.int64, device='cuda')", "low", "8 bytes"),
        ("torch.zeros(128, 1024, device='cuda')", "low", "512 KiB"),
        ("torch.zeros(1024, 1024, device='cuda')", "medium", "1 MiB"),
        ("torch.zeros(4096, 4096, device='cuda')", "high", "64 MiB"),
        ("torch.zeros(n, device='cuda')", "medium", "1 GiB"),
        ("torch.zeros(16, dtype=torch.float16, pin_memory=True)", "low", "64 KiB"),
        ("torch.zeros(4096, 4096, pin_memory=True)", "high", "64 MiB"),
        ("torch.zeros(8)", "low", "32 bytes on the CPU"),
        ("torch.zeros(1024, 1024)", "medium", "4 MiB on the CPU"),
        ("torch.zeros(n, device='cpu')", "low", "64 KiB"),
        ("src.new_zeros(4, 4)", "low", "256 bytes"),
        ("torch.zeros_like(src)", "medium", "template's device"),
    ],
)
def test_the_impact_follows_device_and_size(allocation, impact, measurement):
    found, basis = _impact(allocation)
    assert found == impact, basis
    assert measurement in basis and "RULES.md" not in basis


def test_one_time_code_is_low_whatever_the_size():
    assert _impact("torch.zeros(4096, 4096, device='cuda')", function="__init__")[0] == "low"
