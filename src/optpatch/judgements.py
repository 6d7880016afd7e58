"""A rule's judgements become findings: the one place a `Finding` is built from a verdict.

Two things are decided here rather than in each rule:
- a `Proven` fix whose edits would write a line past the file's line limit
  is kept instead (line_limits.py), with the reason;
- a site in a loop of a test or a benchmark is no model's per-step path:
  its context `HOT` becomes `CALL`;
- a site in a library file's self-test (`SELF_TESTS`, areas.self_test_lines)
  is in `tests`;
- a fix or advice in set-up code as its function reads (`ONCE`: module
  level, `__init__`, a set-up name, a cached function) is `low`, its rule's
  class kept as its size: the project's call graph, when it reaches the
  site, weighs that size by how often the site really runs (frequency.py).
  `prepare_inputs_for_generation` reads as set-up and runs every decoding
  step; judged by its name alone, its fixes were low whatever the graph said.
"""

from __future__ import annotations

from optpatch.line_limits import line_limit, overlong_line
from optpatch.model import CodeArea, Context, Finding, Fix, Impact, KeepCategory, Verdict
from optpatch.rule import Advice, Judgement, Kept, Proven, Rule
from optpatch.rule.verdicts import KEPT_BASIS


def finding_of(rule: type[Rule], unit, judgement: Judgement, self_tests: tuple[tuple[int, int], ...] = ()) -> Finding:
    """The finding of RULE's JUDGEMENT in UNIT (a parsed Python module or C++ unit); SELF_TESTS: the lines of a
    library file's self-test, whose sites are in `tests`."""
    source = unit.source
    verdict = judgement.verdict
    if isinstance(verdict, Proven):
        overlong = overlong_line(source.text, verdict.edits, line_limit(unit.style, source.text))
        if overlong is not None:
            verdict = Kept(overlong.reason(), KeepCategory.CANNOT_SPELL, verdict.proof)
    line, col = judgement.at
    area = source.area
    if self_tests and any(first <= line <= last for first, last in self_tests):
        area = CodeArea.TESTS
    context = judgement.context
    if context is Context.HOT and area is not CodeArea.LIBRARY:
        context = Context.CALL
    common = dict(code=rule.code, name=rule.name, path=source.rel, line=line, col=col, context=context, area=area)
    if isinstance(verdict, Proven):
        return Finding(**common, verdict=Verdict.FIX, reason=verdict.reason, **_in_context(verdict.impact, context),
                       impact_basis=verdict.basis, proof=verdict.proof,
                       fix=Fix(tier=verdict.tier, edits=verdict.edits, replacement=verdict.replacement))
    if isinstance(verdict, Kept):
        return Finding(**common, verdict=Verdict.KEEP, reason=verdict.reason, impact=Impact.NONE, impact_basis=KEPT_BASIS,
                       keep_category=verdict.category, proof=verdict.proof)
    if isinstance(verdict, Advice):
        return Finding(**common, verdict=Verdict.ADVICE, reason=verdict.reason, **_in_context(verdict.impact, context),
                       impact_basis=verdict.basis, keep_category=verdict.category)
    raise TypeError(f"{rule.code} judged {judgement.at} with {type(verdict).__name__}, not Proven, Kept or Advice")


def _in_context(impact: Impact, context: Context) -> dict:
    """The finding's impact and size: the rule's class, or `low` in set-up code with the class kept as the size."""
    if context is Context.ONCE and impact.rank > Impact.LOW.rank:
        return {"impact": Impact.LOW, "size": impact}
    return {"impact": impact}
