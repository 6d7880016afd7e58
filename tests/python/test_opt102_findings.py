"""OPT102's findings: honest impact, the evidence in each reason, and a patch that composes with OPT101."""

import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.model import Context, Impact, KeepCategory, Verdict
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile


def findings(code: str, codes=("OPT102",)):
    source = SourceFile("m.py", Path("m.py"), code.encode(), code, "utf-8", False, "python")
    result = analyse_file(source, select_rules(load_rules(), codes), Settings(), FixPolicy())
    assert result.error is None, result.error
    return {f.line: f for f in result.findings if f.code in codes}


SITES = """\
import numpy as np
import torch

TABLE = torch.arange(1024).cuda()


class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ids = torch.arange(n).cuda()

    def forward(self, x, array):
        positions = torch.arange(x.shape[1]).to(x.device)
        scale = torch.tensor([1.0, 2.0]).to(x.device)
        host = torch.zeros(4).to("cpu")
        loaded = torch.from_numpy(array).to(x.device)
        noise = torch.randn(x.shape).to(x.device)
        return positions, scale, host, loaded, noise
"""


def test_impact_follows_the_measurements_and_the_context():
    found = findings(SITES)
    module_level, init, positions, scale, host, loaded, noise = (found[n] for n in (4, 10, 13, 14, 15, 16, 17))
    assert (module_level.context, module_level.impact) == (Context.ONCE, Impact.LOW)
    assert (init.context, init.impact) == (Context.ONCE, Impact.LOW)
    assert (positions.context, positions.impact) == (Context.HOT, Impact.HIGH)
    assert "size not known" in positions.impact_basis and "850.7 -> 8.4 us" in positions.impact_basis
    assert (noise.impact, noise.fix.tier.value) == (Impact.HIGH, "unsafe")
    assert "6510.2 -> 9.8 us" in noise.impact_basis
    assert (host.verdict, host.impact, host.fix) == (Verdict.ADVICE, Impact.NONE, None)
    assert (loaded.verdict, loaded.impact, loaded.fix) == (Verdict.ADVICE, Impact.NONE, None)
    assert "as_tensor" in loaded.reason and "381.5 vs 356.1 us" in loaded.impact_basis


SIZES = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        one = torch.ones([1]).cuda()
        small = torch.eye(32).cuda()
        middle = torch.zeros(256, 256).cuda()
        large = torch.full((1024, 1024), 7).cuda()
        table = torch.arange(0, 2048, 2).long().cuda()
        template = torch.zeros_like(x).cuda()
        return one, small, middle, large, table, template
"""


@pytest.mark.parametrize(
    "line, impact, figure",
    [
        (6, Impact.LOW, "`ones` at 1: 16.9 -> 10.7 us"),
        (7, Impact.LOW, "`eye` at 1,024: 14.8 -> 15.1 us"),
        (8, Impact.MEDIUM, "`zeros` at 65,536: 57.7 -> 8.3 us"),
        (9, Impact.HIGH, "`full` at 1,048,576: 843.3 -> 11.6 us"),
        (10, Impact.LOW, "`chain` at 1,024: 23.9 -> 23.6 us"),
        (11, Impact.LOW, "the template's device is not known"),
    ],
)
def test_impact_class_and_basis_follow_the_factory_and_its_size(line, impact, figure):
    finding = findings(SIZES)[line]
    assert finding.verdict is Verdict.FIX and finding.context is Context.HOT
    assert finding.impact is impact
    assert figure in finding.impact_basis
    assert "docs/benchmarks.md" in finding.impact_basis and "RULES.md" not in finding.impact_basis


def test_tensor_from_a_python_list_is_advice_towards_pinned_memory():
    advice = findings(SITES)[14]
    assert advice.verdict is Verdict.ADVICE and advice.fix is None
    assert advice.impact is Impact.NONE and "163.4 vs 162.1 us" in advice.impact_basis
    assert "pin_memory=True" in advice.reason and "non_blocking=True" in advice.reason


# What OPT103 (pinned-async-h2d) reports instead: host data copied straight to a provably CUDA device.
OPT103_FORMS = [
    ("torch.tensor(values).cuda()", Verdict.KEEP),
    ("torch.tensor(values, dtype=torch.float16).to('cuda:1')", Verdict.KEEP),
    ("torch.as_tensor(values).to(torch.device('cuda'), non_blocking=True)", Verdict.KEEP),
    ("torch.from_numpy(array).cuda(0)", Verdict.KEEP),
    ("torch.tensor(values).to(d)", Verdict.ADVICE),
    ("torch.tensor(values).to(x.device)", Verdict.ADVICE),
    ("torch.from_numpy(array).to('xpu')", Verdict.ADVICE),
    ("torch.tensor(values).float().cuda()", Verdict.ADVICE),
]


@pytest.mark.parametrize("site, verdict", OPT103_FORMS)
def test_host_data_copies_to_cuda_are_left_to_opt103(site, verdict):
    code = f"import torch\ndef f(values, array, x, d: torch.device):\n    return {site}\n"
    finding = findings(code)[3]
    assert finding.verdict is verdict and finding.fix is None
    if verdict is Verdict.KEEP:
        assert finding.keep_category is KeepCategory.NO_GAIN and "docs/rules/OPT103.md" in finding.reason


def test_reasons_carry_the_evidence_for_the_device():
    code = (
        "import torch\n"
        "def f(n, flag):\n"
        "    target = torch.device('cuda', 1)\n"
        "    if flag:\n"
        "        target = 'cuda:0'\n"
        "    return torch.zeros(n).to(target)\n"
    )
    finding = findings(code)[6]
    assert finding.fix.tier.value == "safe"
    assert "`target` = `torch.device(...)` (L3)" in finding.reason
    assert "`target` = the device string 'cuda:0' (L5)" in finding.reason


@pytest.mark.parametrize(
    "site, reason",
    [
        ("torch.zeros(n).to(torch.float16)", "converts the dtype"),
        ("torch.zeros(n, device='cuda:1').to(d)", "never a second one"),
        ("torch.cat([x, x]).to(d)", "not a factory"),
        ("torch.zeros(n).to(x)", "nothing in this file says"),
        ("torch.full((n,), 0.1).to(d, torch.float64)", "not proven to give the same values"),
        ("torch.zeros(n, pin_memory=True).to(d, non_blocking=True)", "deliberate"),
        ("x.pin_memory().to(d, non_blocking=True)", "deliberate"),
    ],
)
def test_keeps_say_why(site, reason):
    code = f"import torch\ndef f(n, x, d: torch.device):\n    return {site}\n"
    finding = findings(code)[3]
    assert finding.verdict is Verdict.KEEP
    assert reason in finding.reason


def test_combined_site_gets_both_fixes_through_the_cli_and_a_second_run_is_empty(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "buffers.py").write_text(
        "import torch\n\n\ndef gather(src, index):\n"
        "    out = torch.zeros(index.numel(), src.shape[1]).cuda()\n"
        "    torch.index_select(src, 0, index, out=out)\n"
        "    return out\n"
    )
    patch = tmp_path / "first.diff"
    first = run_cli("apply", str(repo), "-o", str(patch), "--select", "OPT101,OPT102")
    assert first.returncode == 0, first.stderr
    assert '+    out = torch.empty(index.numel(), src.shape[1], device="cuda")\n' in patch.read_text()
    subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True, capture_output=True)
    second = tmp_path / "second.diff"
    again = run_cli("apply", str(repo), "-o", str(second), "--select", "OPT101,OPT102")
    assert again.returncode == 0, again.stderr
    assert second.read_bytes() == b""
