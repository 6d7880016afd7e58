"""Differential fuzzing of the Python rules: generated programs never compute anything different after a rewrite."""

import re

import pytest

import optpatch.analysis.overwrite
from fuzz.campaign import run_campaign
from fuzz.oracle import DifferentialFailure, assert_same_results
from fuzz.programs import FACTORIES, FULL_WRITES, USES

CI_PROGRAMS = 400


def test_rewrites_never_change_a_result():
    sources: list[str] = []
    tally = run_campaign(CI_PROGRAMS, sources=sources)
    assert tally["programs"] >= CI_PROGRAMS
    # A campaign that rewrites nothing, keeps nothing, or never reaches a form of use would prove little.
    assert tally["rewritten"] >= CI_PROGRAMS // 4, tally
    assert tally["kept"] >= CI_PROGRAMS // 4, tally
    assert not unreached_forms("\n".join(sources))


def test_a_planted_unsound_proof_is_found_and_shrunk(monkeypatch):
    """The fuzzer can fail: a prover that takes any partial write for a full one is caught, with a minimal program."""
    monkeypatch.setattr(optpatch.analysis.overwrite, "covers", lambda regions, size: True)
    with pytest.raises(DifferentialFailure) as failure:
        run_campaign(CI_PROGRAMS)
    message = str(failure.value)
    assert "the rewrite changed a result" in message
    program = message.split("--- program ---")[1].split("--- rewrite ---")[0]
    statements = program.split("def program(")[1].strip().splitlines()[1:]
    # Shrunk to (about) the smallest program the generator makes: the allocation, one use, the return.
    assert len(statements) <= 4, program


def test_the_oracle_catches_a_wrong_rewrite():
    source = (
        "import torch\n\n"
        "def program(src, isrc, flag, n, sink):\n"
        "    x = torch.zeros(4, 3)\n"
        "    if flag:\n"
        "        x.copy_(src)\n"
        "    return x, sink\n"
    )
    with pytest.raises(DifferentialFailure, match="flag=False"):
        assert_same_results(source, source.replace("torch.zeros", "torch.empty"))


def _template_pattern(template: str) -> re.Pattern:
    first_line = re.escape(template.splitlines()[0])
    for placeholder, pattern in (("x", r"[xy]"), ("src", r"i?src"), ("v", r"[-\d.]+"), ("t", r"[\d.]+"), ("dtype", r"(, dtype=torch\.int64)?")):
        first_line = first_line.replace(re.escape("{" + placeholder + "}"), pattern)
    return re.compile(first_line)


CONTROL_FLOW = (
    "if ", "elif ", "else:", "for i in range(n):", "while k", "with torch.no_grad():", "with contextlib.suppress(ValueError):",
    "try:", "except ValueError:", "finally:", "match n:", "break", "continue", "yield ", "del ", "fail_if(",
)


def unreached_forms(text: str) -> list[str]:
    """Factories, uses and control-flow forms of the generator that no program in `text` contains."""
    templates = [f.template for f in FACTORIES] + list(FULL_WRITES) + [t for group in USES.values() for t in group]
    missing = [t for t in templates if not _template_pattern(t).search(text)]
    return missing + [form for form in CONTROL_FLOW if form not in text]


def test_unreached_forms_are_reported():
    assert unreached_forms("") and "tz((4, 3){dtype})" in unreached_forms("x = torch.zeros(4, 3)")
