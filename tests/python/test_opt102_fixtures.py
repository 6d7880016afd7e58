import sys
from pathlib import Path

import pytest
import torch

from annotated import GOLDEN_SUFFIXES, Raised, analyse, assert_same, changed_lines, expectations, load_module, sites
from cuda_on_cpu import CudaOnCpu, device_of
from optpatch.poison import MODES, poisoned
from optpatch.policy import FixPolicy, fix_id
from optpatch.rule import load_rules

FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "python" / "opt102"
FIXTURES = sorted(p for p in FIXTURE_DIR.glob("*.py") if not p.name.endswith(GOLDEN_SUFFIXES))
# Fixtures that also carry OPT101 sites: both rules' fixes must compose into one edit.
COMBINED = {"combined_opt101": ("OPT101", "OPT102")}


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


# -- sites kept for what they do: forcing their rewrite changes what the code does ---------------------------

SIDE_EFFECTS = FIXTURE_DIR / "side_effects.py"
# The rule's package (`optpatch_rules.opt102`): its steps are patched where they are looked up (`judge.discarded`).
RULE_PACKAGE = next(rule for rule in load_rules() if rule.code == "OPT102").__module__.rpartition(".")[0]


def _outcomes(code: str, name: str, mode: str) -> dict[str, tuple[object, int]]:
    """Each case's result (or what it raised) and the host-to-device copies it made."""
    outcomes = {}
    with poisoned(mode):
        module = load_module(code, name)
        for case in sorted(n for n in vars(module) if n.startswith("case_")):
            torch.manual_seed(1234)
            with CudaOnCpu() as emulation:
                try:
                    result = getattr(module, case)()
                except (Exception, pytest.fail.Exception) as error:
                    result = Raised(type(error).__name__, str(error))
            outcomes[case] = (result, emulation.host_copies)
    return outcomes


def _differ(a, b) -> bool:
    try:
        assert_same(a, b, "")
    except AssertionError:
        return True
    return False


def _forced(path: Path, monkeypatch, checks: dict[str, object]) -> str:
    """The fixture rewritten at the safe and validate tiers with the rule's `checks` replaced (by `module.name`)."""
    for name, replacement in checks.items():
        module, _, attribute = name.rpartition(".")
        monkeypatch.setattr(sys.modules[f"{RULE_PACKAGE}.{module}"], attribute, replacement)
    first = analyse(path, ("OPT102",))
    accepted = frozenset(fix_id(f) for f in first.findings if f.fix is not None)
    return analyse(path, ("OPT102",), FixPolicy(validated=accepted)).new.decode()


def test_forcing_the_side_effect_keeps_changes_results_and_copies(monkeypatch):
    """With the two checks off, every kept site of side_effects.py is rewritten: the probes stop copying (on a GPU,
    stop waiting for queued work), and the exception checks see another error or none."""
    text = SIDE_EFFECTS.read_text()
    forced = _forced(SIDE_EFFECTS, monkeypatch, {"judge.exception_expected": lambda module, site: None,
                                                 "judge.discarded": lambda module, site, reads: None})
    kept = {site.line for site in sites(text) if site.verdict == "keep"}
    assert kept <= changed_lines(text, forced)
    for mode in MODES:
        before, after = _outcomes(text, "before", mode), _outcomes(forced, "after", mode)
        changed = {case for case in before if _differ(before[case][0], after[case][0])}
        assert changed == {"case_rejected_by_pytest", "case_failure_message", "case_optional_copy", "case_unittest_checks"}
        assert (before["case_probes"][1], after["case_probes"][1]) == (4, 0)


def test_forcing_a_broadcast_view_onto_the_device_changes_what_a_write_does(monkeypatch):
    """`arange(n).expand(rows, -1).to(d)` is a tensor of its own; on the device, the expanded view rejects `add_`."""
    path = FIXTURE_DIR / "chains.py"
    text = path.read_text()
    forced = _forced(path, monkeypatch, {"chain._expands_nothing": lambda call: True})
    broadcast = {site.line for site in sites(text) if "expand(rows" in text.splitlines()[site.line - 1] and site.verdict == "keep"}
    assert len(broadcast) == 2 and broadcast <= changed_lines(text, forced)
    for mode in MODES:
        before, after = _outcomes(text, "before", mode), _outcomes(forced, "after", mode)
        assert not isinstance(before["case_broadcast_view"][0], Raised)
        assert isinstance(after["case_broadcast_view"][0], Raised)
        assert {case for case in before if _differ(before[case][0], after[case][0])} == {"case_broadcast_view"}


def test_forcing_a_legacy_type_to_stay_after_the_device_moves_the_result_back_to_the_host(monkeypatch):
    """`.type(torch.IntTensor)` moves to the CPU: kept as written after `device=`, the result would land on the host.
    The emulation tells, so the dtype spelling is what keeps dtype_chains.py's results on their devices."""
    path = FIXTURE_DIR / "dtype_chains.py"

    def spelled_as_written(module, op):
        return module.text(op.call.args[0].value)

    forced = _forced(path, monkeypatch, {"chain.merged_legacy": lambda module, site: None,
                                         "edits.merged_legacy": lambda module, site: None,
                                         "chain.legacy_dtype_text": spelled_as_written,
                                         "edits.legacy_dtype_text": spelled_as_written})
    before, after = _outcomes(path.read_text(), "before", MODES[0]), _outcomes(forced, "after", MODES[0])
    changed = {case for case in before if _differ(before[case][0], after[case][0])}
    assert changed == {"case_point_counts", "case_legacy_after_a_view", "case_legacy_with_a_factory_dtype",
                       "case_two_statements", "case_legacy_float_of_integers", "case_imported_legacy_type"}
