from pathlib import Path

import pytest
import torch

from annotated import analyse, assert_same, check_fixture, expectations
from cuda_on_cpu import CudaOnCpu, device_of
from optpatch.policy import FixPolicy

FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "python" / "opt102"
GOLDEN_SUFFIXES = (".fixed.py", ".validate.py", ".unsafe.py")
FIXTURES = sorted(p for p in FIXTURE_DIR.glob("*.py") if not p.name.endswith(GOLDEN_SUFFIXES))
# Fixtures that also carry OPT101 sites: both rules' fixes must compose into one edit.
COMBINED = {"combined_opt101": ("OPT101", "OPT102")}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture(path):
    check_fixture(path, COMBINED.get(path.stem, ("OPT102",)), environment=CudaOnCpu)


def test_fixtures_cover_at_least_thirty_sites_of_every_verdict():
    found = [verdict for p in FIXTURES for (_, code, verdict) in expectations(p.read_text()) if code == "OPT102"]
    assert len(found) >= 30, len(found)
    assert {"fix", "validate", "unsafe", "keep", "advice"} <= set(found)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_rewritten_fixtures_are_left_alone_on_a_second_run(path):
    codes = COMBINED.get(path.stem, ("OPT102",))
    for suffix, policy in ((".fixed.py", FixPolicy()), (".unsafe.py", FixPolicy(unsafe_fixes=True))):
        golden = path.with_suffix(suffix)
        if golden.exists():
            assert analyse(golden, codes, policy).new is None, f"{golden.name} changes again"


def test_cuda_emulation_tells_devices_apart():
    with CudaOnCpu():
        moved = torch.zeros(2).cuda(1)
        created = torch.zeros(2, device="cuda:0")
        current = torch.zeros(2, device="cuda")
    assert device_of(moved) == torch.device("cuda", 1)
    assert device_of(created) == device_of(current) == torch.device("cuda", 0)
    with pytest.raises(AssertionError):
        assert_same(moved, created, "moved vs created")
