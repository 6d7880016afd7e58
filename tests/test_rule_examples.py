"""Every rule's VALID / INVALID examples and documentation, turned into tests (Fixit-style)."""

from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import DOC_SECTIONS, load_rules
from optpatch.source import SourceFile

RULES = load_rules()
SUFFIX = {"python": ".py", "cpp": ".cu"}  # a .cu file is built by nvcc, with CUDA's headers (OPT202)


def _analyse(rule, code: str, tier: str = "safe"):
    name = "example" + SUFFIX[rule.language]
    source = SourceFile(name, Path(name), code.encode(), code, "utf-8", False, rule.language)
    policy = FixPolicy(unsafe_fixes=tier == "unsafe")
    result = analyse_file(source, [rule], Settings(), policy)
    assert result.error is None, result.error
    if tier == "validate":  # a validation run would accept exactly these
        from optpatch.policy import fix_id

        accepted = frozenset(fix_id(f) for f in result.findings if f.fix is not None)
        result = analyse_file(source, [rule], Settings(), FixPolicy(validated=accepted))
    return result


def _examples(kind: str) -> list:
    return list(_iter_examples(kind))


def _iter_examples(kind: str):
    for rule in RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize("rule, code", _examples("VALID"))
def test_valid_examples_are_left_alone(rule, code):
    result = _analyse(rule, code)
    assert result.new is None
    assert not any(decision.accepted for _, decision in result.decided)


@pytest.mark.parametrize("rule, example", _examples("INVALID"))
def test_invalid_examples_are_rewritten_exactly(rule, example):
    result = _analyse(rule, example.code, example.tier)
    assert result.new is not None, f"{rule.code} did not rewrite:\n{example.code}"
    assert result.new.decode() == example.fixed


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_documents_itself(rule):
    sections = rule.documentation()
    missing = [s for s in DOC_SECTIONS if not sections.get(s)]
    assert not missing, f"{rule.code} docstring lacks sections: {missing}"
    assert rule.INVALID and rule.VALID, f"{rule.code} needs examples"
    assert rule.code.startswith("OPT") and rule.name and rule.summary


def test_rule_codes_are_unique_and_sorted():
    codes = [r.code for r in RULES]
    assert codes == sorted(set(codes))
