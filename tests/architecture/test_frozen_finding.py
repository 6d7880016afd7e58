"""A `Finding` is a value: no stage assigns to it, each one that places or weighs it builds a new one.

The result cache keeps every analysis of a file, and the fix policy and
narrowing are applied after it, in every run (docs/architecture.md). A stage
that changed a cached finding in place would carry one run's decision into
the next. So `Finding` and `Fix` are frozen, and what a run decides is a
`Decision` beside the finding (`Decided`).
"""

from __future__ import annotations

import copy
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

from optpatch.cpp_headers import HeaderSetup
from optpatch.model import Decision, Finding, Fix, Frequency, FrequencyEvidence, FrequencySource, Tier
from optpatch.passes import FileRecord, settle, text_digest
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules
from optpatch.source import SourceFile

# OPT202's fix overlaps OPT201's (`table` becomes a vector, `from_blob(table, ...)` its `.data()`): the first pass
# applies OPT201 and defers OPT202, the second derives OPT202 again from the rewritten text.
CODE = (
    "void f(const std::vector<torch::Tensor>& caches, torch::Device device) {\n"
    "  TORCH_CHECK(device.is_cuda());\n"
    "  const int n = caches.size();\n"
    "  int64_t table[n];\n"
    "  for (int i = 0; i < n; ++i) table[i] = i;\n"
    "  auto copy = torch::from_blob(table, {n}, torch::kInt64).to(device);\n"
    "  copy.zero_();\n"
    "}\n"
)
ONE_TIME = FrequencyEvidence(Frequency.ONE_TIME, FrequencySource.MODULE_LEVEL)


class EveryLine:
    """A narrowing filter that leaves every finding in scope, and records what it was shown."""

    def __init__(self) -> None:
        self.shown: list[Finding] = []

    def out_of_scope(self, findings):
        self.shown += findings
        return [None] * len(findings)


@pytest.fixture(scope="module")
def settled():
    from optpatch.frequency import FileFrequencies

    source = SourceFile("example.cu", Path("example.cu"), CODE.encode(), CODE, "utf-8", False, "cpp")
    rules = [rule for rule in load_rules() if rule.code in ("OPT201", "OPT202")]
    headers = HeaderSetup(Path.cwd(), enabled=False)
    record = FileRecord(text_digest(source.raw))
    record.analysis_of(source, lambda: rules, headers)
    cached = copy.deepcopy(record.first)
    narrowing = EveryLine()
    result = settle(record, lambda: source, lambda: rules, FixPolicy(), (narrowing,), source.rel, headers,
                    FileFrequencies(functions=(), module=ONE_TIME))
    return record, cached, narrowing, result


def test_a_finding_its_fix_and_its_decision_refuse_assignment(settled):
    record, _, _, result = settled
    finding, decision = result.decided[0]
    with pytest.raises(FrozenInstanceError):
        finding.line = 1
    with pytest.raises(FrozenInstanceError):
        finding.fix.tier = Tier.UNSAFE
    with pytest.raises(FrozenInstanceError):
        decision.accepted = False
    with pytest.raises(FrozenInstanceError):
        record.first.findings[0].regions = ()
    decided = {field.name for field in fields(Decision)}
    assert not decided & {field.name for field in fields(Finding)}, "a run's decision is no field of the finding"


def test_a_finding_holds_a_fix_exactly_when_its_verdict_is_fix(settled):
    finding = settled[3].decided[0].finding
    with pytest.raises(ValueError):
        Finding(**{**{field.name: getattr(finding, field.name) for field in fields(Finding)}, "fix": None})
    assert isinstance(finding.fix, Fix)


def test_settling_gives_new_findings_and_leaves_the_cached_analysis_as_it_was(settled):
    record, cached, narrowing, result = settled
    assert record.first == cached
    analysed = [finding for analysis in record.analyses.values() for finding in analysis.findings]
    assert len(record.analyses) == 2, "the overlap must send the file through a second pass"
    assert {(f.code, f.analysis_pass, d.accepted) for f, d in result.decided} == {("OPT201", 0, True), ("OPT202", 1, True)}
    # each stage's output is a new value: placed and weighed copies, never the cached ones
    assert not {id(f) for f, _ in result.decided} & {id(f) for f in analysed}
    assert not {id(f) for f in narrowing.shown} & {id(f) for f in analysed}
    assert all(f.frequency == ONE_TIME for f, _ in result.decided) and all(f.frequency is None for f in analysed)
    later = result.decided[1].finding
    assert later.regions and later.regions != next(f.regions for f in analysed if f.code == "OPT202")
