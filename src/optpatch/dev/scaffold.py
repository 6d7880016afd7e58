"""The skeleton of a new rule: a working placeholder a newcomer turns into the real thing.

`new_rule(root, "OPT104", "my-rule")` writes, under the checkout ROOT:

- `rules/opt104/rule.py`: a Python rule that renames calls of `old_api` to
  `new_api` and keeps a call with starred arguments. Every part a real rule
  has is there, small: declarations, the manual's sections, VALID and
  INVALID examples, a cheap `screen`, and a `check` that yields `Proven` and
  `Kept` judgements;
- `tests/fixtures/python/opt104/placeholder.py` and its `.fixed.py`: one
  fixed and one kept site, run before and after under poisoned memory by
  tests/test_fixtures.py;
- `docs/rules/OPT104.md` and the index row, generated from the docstring.

`language="cpp"` writes a C++/CUDA rule instead: the same rename in host
code, reading only the functions that call `old_api` (`nodes_calling`),
keeping device code and a call spelled inside a macro; its fixture is
`tests/fixtures/cpp/opt104/placeholder.cpp` (with its `.fixed.cpp`), a
program compiled and run before and after the rewrite.

The result passes the test suite as it is (tests/test_scaffold.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from optpatch.model import Language

CODE = re.compile(r"OPT\d{3}")
NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


class ScaffoldError(Exception):
    """The rule cannot be created as asked: the message says why, in one line."""


def new_rule(root: Path, code: str, name: str, language: Language | str = Language.PYTHON) -> list[Path]:
    """Write the new rule's package, fixture and docs page under ROOT; return the files created."""
    if language not in set(Language):
        raise ScaffoldError(f"language {language!r} is not one of: {', '.join(Language)}")
    language = Language(language)
    if not CODE.fullmatch(code):
        raise ScaffoldError(f"code {code!r} is not OPT followed by three digits (OPT104)")
    if not NAME.fullmatch(name):
        raise ScaffoldError(f"name {name!r} is not lower-case words joined by hyphens (zeros-to-empty)")
    rules = root / "rules"
    if not rules.is_dir():
        raise ScaffoldError(f"{root} is not an optpatch checkout: no rules/ folder")
    package = rules / code.lower()
    fixtures = root / "tests" / "fixtures" / language.value / code.lower()
    for taken in (package, *(root / "tests" / "fixtures" / other.value / code.lower() for other in Language)):
        if taken.exists():
            raise ScaffoldError(f"{taken.relative_to(root)} exists already: pick another code")
    words = {"CODE": code, "LOWER": code.lower(), "NAME": name,
             "CLASS": "".join(word.capitalize() for word in name.split("-"))}
    if language is Language.PYTHON:
        files = {
            package / "rule.py": RULE_TEMPLATE,
            fixtures / "placeholder.py": FIXTURE_TEMPLATE,
            fixtures / "placeholder.fixed.py": FIXTURE_TEMPLATE.replace("old_api(2)", "new_api(2)"),
        }
    else:
        files = {
            package / "rule.py": CPP_RULE_TEMPLATE,
            fixtures / "placeholder.cpp": CPP_FIXTURE_TEMPLATE,
            fixtures / "placeholder.fixed.cpp": CPP_FIXTURE_TEMPLATE.replace("return old_api(x);", "return new_api(x);"),
        }
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_filled(template, words), encoding="utf-8")
    return [*files, *_write_docs(root / "rules", root / "docs" / "rules")]


def _filled(template: str, words: dict[str, str]) -> str:
    return re.sub(r"\{\{(\w+)\}\}", lambda match: words[match.group(1)], template)


def _write_docs(rules: Path, docs: Path) -> list[Path]:
    """Regenerate docs/rules from the rules folder (as `optpatch rules --write-docs`); return the pages that changed."""
    from optpatch.rule import load_rules
    from optpatch.rule_docs import rule_docs

    docs.mkdir(parents=True, exist_ok=True)
    written = []
    for page, text in rule_docs(load_rules(rules)).items():
        path = docs / page
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


RULE_TEMPLATE = '''"""{{CODE}} {{NAME}}: the rule's class; its own analyses go in modules beside this file (`from .site import ...`).

Made by `make new-rule`: a placeholder that renames `old_api(...)` to
`new_api(...)`. Replace the placeholder's logic, docstring, examples and
fixture (tests/fixtures/python/{{LOWER}}/) with the rule's own; see
docs/architecture.md, "A new rule".
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from optpatch.rule import Edit, Example, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier
from optpatch.rule.python import CallIndex, PythonModule, dotted_name

OLD, NEW = "old_api", "new_api"


class {{CLASS}}(Rule):
    """Rewrites calls of `old_api` to `new_api` (a placeholder: say here what the rule does).

    ## What it does

    Finds calls of `old_api(...)` and renames them to `new_api(...)`.

    ## Why is this bad

    Say what the site costs, and where: which op, how often it runs.

    ## Example

    ```python
    old_api(x)
    ```

    ## Use instead

    ```python
    new_api(x)
    ```

    ## Fix safety

    Say what the rewrite must prove before it is `safe`, and which sites are
    kept and why. The placeholder keeps a call with starred arguments.

    ## Known problems

    None yet.

    ## Measured impact

    Not measured: give the card, torch version and benchmark of each figure.

    ## References

    - docs/architecture.md, "A new rule"
    """

    code = "{{CODE}}"
    name = "{{NAME}}"
    summary = "placeholder: rewrites `old_api(...)` to `new_api(...)`"
    language = "python"
    default_tier = "safe"
    trigger_words = (OLD,)

    VALID = [
        "new_api(1)\\n",
        "args = (1,)\\nold_api(*args)\\n",  # kept: starred arguments
    ]
    INVALID = [
        Example("old_api(1)\\n", "new_api(1)\\n"),
    ]

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files that call something named `old_api` (the `ast` is cheaper than libcst)."""
        return bool(calls.named(OLD))

    def check(self, module: PythonModule) -> Iterator[Judgement]:
        for call in module.calls():
            if dotted_name(call.func) == OLD:
                yield Judgement(module.start(call), module.context(call), self._verdict(module, call))

    def _verdict(self, module: PythonModule, call: cst.Call) -> Proven | Kept:
        if any(argument.star for argument in call.args):
            return Kept("starred arguments: `new_api` may take its parameters otherwise", KeepCategory.OTHER)
        start, end = module.span(call.func)
        return Proven(reason=f"`{OLD}` and `{NEW}` take the same arguments", tier=Tier.SAFE,
                      edits=(Edit(start, end, NEW),), impact=Impact.LOW, basis="placeholder: not measured")
'''

FIXTURE_TEMPLATE = '''"""{{CODE}}'s placeholder fixture: each site's verdict on its line, and `case_*` functions run before and after."""


def old_api(x):
    return x + 1


def new_api(x):
    return x + 1


def case_rewritten():
    return old_api(2)  # expect: {{CODE}} fix


def case_kept():
    args = (3,)
    return old_api(*args)  # expect: {{CODE}} keep
'''


CPP_RULE_TEMPLATE = '''"""{{CODE}} {{NAME}}: the rule's class; its own analyses go in modules beside this file (`from .site import ...`).

Made by `make new-rule LANGUAGE=cpp`: a placeholder that renames
`old_api(...)` to `new_api(...)` in C++/CUDA host code. Replace the
placeholder's logic, docstring, examples and fixture
(tests/fixtures/cpp/{{LOWER}}/) with the rule's own; see
docs/architecture.md, "A new rule", and docs/cpp-frontend.md.
"""

from __future__ import annotations

import re
from typing import Iterator

from optpatch.rule import Edit, Example, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier
from optpatch.rule.cpp import CppUnit, CursorKind, Node, Place

OLD, NEW = "old_api", "new_api"
_CALLED = re.compile(rf"\\b{OLD}\\s*\\(")


class {{CLASS}}(Rule):
    """Rewrites calls of `old_api` to `new_api` in host code (a placeholder: say here what the rule does).

    ## What it does

    Finds calls of `old_api(...)` in C++/CUDA host code and renames them to
    `new_api(...)`.

    ## Why is this bad

    Say what the site costs, and where: which op, how often it runs.

    ## Example

    ```cpp
    int y = old_api(x);
    ```

    ## Use instead

    ```cpp
    int y = new_api(x);
    ```

    ## Fix safety

    Say what the rewrite must prove before it is `safe`, and which sites are
    kept and why. The placeholder keeps a call in device code and a call
    spelled inside a macro (renaming it there would change every use of the
    macro).

    ## Known problems

    None yet.

    ## Measured impact

    Not measured: give the card, torch version and benchmark of each figure.

    ## References

    - docs/architecture.md, "A new rule"; docs/cpp-frontend.md
    """

    code = "{{CODE}}"
    name = "{{NAME}}"
    summary = "placeholder: rewrites `old_api(...)` to `new_api(...)` in host code"
    language = "cpp"
    default_tier = "safe"
    trigger_words = (OLD,)

    VALID = [
        "int new_api(int x);\\nint f(int x) { return new_api(x); }\\n",
        # kept: the call is spelled inside the macro, not here
        "int old_api(int x);\\n#define TWICE(x) old_api(old_api(x))\\nint f(int x) { return TWICE(x); }\\n",
    ]
    INVALID = [
        # both declared: the rewrite must parse (a rule's edit that adds a clang error is refused, not applied)
        Example("int old_api(int x);\\nint new_api(int x);\\nint f(int x) { return old_api(x); }\\n",
                "int old_api(int x);\\nint new_api(int x);\\nint f(int x) { return new_api(x); }\\n"),
    ]

    @classmethod
    def screen_text(cls, text: str) -> bool:
        """Only files whose text calls something named `old_api` are parsed for this rule."""
        return _CALLED.search(text) is not None

    def check(self, unit: CppUnit) -> Iterator[Judgement]:
        # Only the functions that call it are read, not the whole file (docs/cpp-frontend.md, `nodes_calling`).
        for node in unit.nodes_calling(frozenset({OLD})):
            if node.kind is CursorKind.CALL_EXPR and node.spelling == OLD:
                where = unit.where(node)
                context = unit.run_context(node, where.function)
                yield Judgement(unit.position(node.start), context, self._verdict(unit, node, where.place, where.reason))

    def _verdict(self, unit: CppUnit, call: Node, place: Place, why: str) -> Proven | Kept:
        if place is not Place.HOST:
            category = KeepCategory.DEVICE_CODE if place is Place.DEVICE else KeepCategory.UNRESOLVED
            return Kept(f"not host code: {why}", category)
        callee = next((t for t in unit.tokens_in(call.start, call.end) if t.spelling == OLD), None)
        if callee is None:
            return Kept(f"`{OLD}` is spelled in a macro: renaming it would change every use", KeepCategory.OTHER)
        return Proven(reason=f"`{OLD}` and `{NEW}` take the same arguments", tier=Tier.SAFE,
                      edits=(Edit(callee.start, callee.end, NEW),), impact=Impact.LOW, basis="placeholder: not measured")
'''

CPP_FIXTURE_TEMPLATE = """// {{CODE}}'s placeholder fixture: each site's verdict on its line (`// expect:` a fix, `// ok: ... keep` a
// keep); main() prints what the original and the rewrite compute, which must agree.
#include <iostream>

int old_api(int x) { return x + 1; }
int new_api(int x) { return x + 1; }
#define TWICE(x) old_api(old_api(x))

int rewritten(int x) {
  return old_api(x);  // expect: {{CODE}}
}

int kept(int x) {
  return TWICE(x);  // ok: {{CODE}} keep
}

int main() {
  std::cout << rewritten(1) << " " << kept(2) << "\\n";
  return 0;
}
"""
