"""The rule API: what a rule declares, what it concludes, and how rules are found.

A rule is a package under `rules/` (`rules/opt103/`): `rule.py` holds one
subclass of `Rule`, beside the rule's own analyses. Its class docstring is
its manual (the sections of `DOC_SECTIONS`), and its `VALID` and `INVALID`
examples become tests automatically (tests/test_rule_examples.py), so
documentation, examples and behaviour cannot drift apart.

A rule imports only this API: `optpatch.rule` (the base class and the
verdicts), `optpatch.rule.python` or `optpatch.rule.cpp` (its frontend),
`optpatch.analysis.*` (analyses shared between rules), and its own package
(tests/architecture/test_rule_api.py).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import re
import sys
import types
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Iterable

from optpatch.model import CodeArea, Context, Edit, Finding, Impact, KeepCategory, Tier
from optpatch.rule.verdicts import Advice, Judgement, Kept, Proven

if TYPE_CHECKING:
    import ast

    from optpatch.python_screen import CallIndex
    from optpatch.source import SourceFile

# `Finding` only to read: what `needs_headers` is shown of a rule's own judgements, once the engine placed them.
__all__ = ["Advice", "CodeArea", "Context", "Edit", "Example", "Finding", "Impact", "Judgement", "KeepCategory", "Kept",
           "Proven", "Rule", "Tier"]

DOC_SECTIONS = (
    "What it does",
    "Why is this bad",
    "Example",
    "Use instead",
    "Fix safety",
    "Known problems",
    "Measured impact",
    "References",
)


@dataclass(frozen=True)
class Example:
    """Source that must be rewritten, and exactly what it must become.

    `fixed` is the whole file after every fix of this rule at `tier` is
    applied. Examples live in the rule file, next to the logic they pin down.
    """

    code: str
    fixed: str
    tier: str = "safe"


class Rule:
    """Base class of every optpatch rule.

    Subclasses set the class attributes below and implement `check`, which
    yields a `Judgement` for every site it examined: `Proven` fixes with
    their proof, `Kept` sites with the use that blocked them, `Advice`
    (verdicts.py). The engine turns them into findings.
    """

    code: ClassVar[str]  # "OPT101"
    name: ClassVar[str]  # "zeros-to-empty"
    summary: ClassVar[str]  # one line for `optpatch rules`
    language: ClassVar[str]  # "python" or "cpp" (a `Language`)
    default_tier: ClassVar[str]  # a `Tier`
    tags: ClassVar[tuple[str, ...]] = ()
    # Bumped whenever the rule's output may change: part of the cache key.
    version: ClassVar[int] = 1
    # Cheap text filter: a file containing none of these strings is skipped
    # before any parser runs.
    trigger_words: ClassVar[tuple[str, ...]] = ()
    # The profiler's names of the ops a fix saves (plain literals): `--profile` times them at the site.
    profiled_ops: ClassVar[tuple[str, ...]] = ()

    VALID: ClassVar[list[str]] = []  # code this rule must leave unchanged
    INVALID: ClassVar[list[Example]] = []  # code this rule must rewrite

    def check(self, unit) -> Iterable[Judgement]:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def wants(cls, source: "SourceFile") -> bool:
        """True when the file may hold a site for this rule (no parsing)."""
        if source.language != cls.language:
            return False
        return not cls.trigger_words or any(w in source.text for w in cls.trigger_words)

    @classmethod
    def screen_text(cls, text: str) -> bool:
        """False when the file's text already shows it holds no site: runs after `trigger_words`, before any parser.

        For a rule whose trigger words are in nearly every file (OPT201's
        `[`) and whose sites a look at the text can rule out (a C++ file,
        whose parse is most of its cost, has no use for `screen`). Not one of
        the facts a run reads without importing the rule (rule_facts.py), so
        `trigger_words` stay the cheap first filter. Like `screen`, it must
        accept every file where `check` could find a site or `needs_headers`
        ask for headers. The default accepts every file.
        """
        return True

    @classmethod
    def screen(cls, calls: "CallIndex") -> bool:
        """False when the file's Python `ast` already shows it holds no site (Python rules only).

        Runs after `trigger_words` and before libcst parses the file, which
        costs about ten times the `ast` parse: worth overriding when the
        trigger words are common but sites are rare (`.to(` is everywhere,
        `torch.zeros(n).to(d)` is not). `calls.named("to", "cuda")` lists
        the `ast.Call` nodes whose callee ends in those names. A screen must
        accept every file where `check` could find a site: a rejected file
        is not analysed at all. The default accepts every file.
        """
        return True

    @classmethod
    def needs(cls, calls: "CallIndex") -> list[ast.AST] | None:
        """The `ast` nodes whose functions `check` must see whole; None (the default): the whole module.

        Python rules only; runs after `screen`. Every function and class
        holding none of the nodes that the file's rules need is replaced by
        a stub that binds its name (python_outline.py), so libcst parses
        less. A rule may return a list when nothing it reads lies outside
        the functions that hold those nodes, their classes' headers and the
        module's other statements (imports, assignments, blocks), which are
        kept (all but the value of a large literal table no kept code
        reads): the sites `check` examines, and anything it looks up
        elsewhere by walking the module (its own `new_zeros` methods,
        `from torch import` in a function, a buffer's writer in another
        method). tests/python/test_python_outline.py checks each list
        against the whole module.
        """
        return None

    @classmethod
    def resolved_in_stubs(cls, calls: "CallIndex") -> set[str]:
        """The names whose module-level meaning `check` reads in functions the outline stubbed.

        Python rules with `needs` only. A rule that judges some sites from
        the screen's `ast` in a stubbed function (OPT101's judged-alone
        allocations) resolves their callees through the module's bindings;
        a `global` that rebinds one of these names elsewhere must then stay
        in the outline. Any other name is read in kept code, where the
        outline sees the read itself (python_outline.py). The default: none.
        """
        return set()

    @classmethod
    def needs_headers(cls, unit, findings: list[Finding]) -> bool:
        """C++ rules: True when the project's headers may change what `check` found in this header-free unit.

        Runs on the header-free parse, with this rule's findings there. A
        file some rule says True for is parsed again with its headers, and
        every rule checks that parse instead (cpp_second_look.py); the parse
        costs ~0.1-0.4 s once its precompiled header exists. The default:
        any finding, since a site examined without its headers (a bound, a
        type, a callee) may resolve otherwise with them. A rule that can
        miss a site without headers (a declaration the parse dropped) says
        so here too, and names its question (`unit.ask_headers`) for the
        report's `cpp_headers` line; the default names the sites.
        """
        if findings:
            lines = ", ".join(f"L{finding.line}" for finding in findings[:3]) + (", ..." if len(findings) > 3 else "")
            unit.ask_headers(f"{cls.code} {lines}: judged without the project's headers")
        return bool(findings)

    @classmethod
    def documentation(cls) -> dict[str, str]:
        """The docstring split into its sections, in order."""
        return parse_doc_sections(inspect.cleandoc(cls.__doc__ or ""))


def parse_doc_sections(doc: str) -> dict[str, str]:
    """Split a rule docstring on its `## Heading` lines."""
    sections: dict[str, str] = {}
    heading = "Summary"
    body: list[str] = []
    for line in doc.splitlines():
        match = re.fullmatch(r"##\s+(.+?)\s*", line)
        if match:
            sections[heading] = "\n".join(body).strip()
            heading, body = match.group(1), []
        else:
            body.append(line)
    sections[heading] = "\n".join(body).strip()
    return sections


def builtin_rules_dir() -> Path:
    """Where the bundled rules live: inside the wheel, or beside `src/` in a checkout."""
    package = Path(__file__).resolve().parents[1]  # src/optpatch, or optpatch in a wheel
    packaged = package / "builtin_rules"
    if packaged.is_dir():
        return packaged
    return package.parents[1] / "rules"


BUILTIN_PACKAGE = "optpatch_rules"


@cache
def load_rules(rules_dir: Path | None = None, packages: frozenset[str] | None = None) -> tuple[type[Rule], ...]:
    """Import every rule package's `rule.py` (`rules/*/rule.py`), or only those of PACKAGES (by folder name: `opt101`),
    and return its Rule classes, sorted by code (rule_facts.load_rules_for picks the packages by code)."""
    directory = rules_dir or builtin_rules_dir()
    package = _rules_package(directory)
    found: dict[str, type[Rule]] = {}
    for path in rule_modules(directory):
        if packages is not None and path.parent.name not in packages:
            continue
        module_name = f"{package}.{path.parent.name}.rule"
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module_name:
                if value.code in found:
                    raise RuntimeError(f"{path}: rule code {value.code} is defined twice")
                found[value.code] = value
    return tuple(found[code] for code in sorted(found))


def rule_modules(directory: Path) -> list[Path]:
    """The `rule.py` of every rule package in DIRECTORY; a package whose name starts with `_` is not a rule."""
    return [path for path in sorted(directory.glob("*/rule.py")) if not path.parent.name.startswith("_")]


def _rules_package(directory: Path) -> str:
    """The importable package whose folder is DIRECTORY: each rule package is one of its subpackages.

    The bundled rules are `optpatch_rules`; another folder (a test's) gets a
    name of its own, so two folders never share modules.
    """
    resolved = directory.resolve()
    name = BUILTIN_PACKAGE
    if resolved != builtin_rules_dir().resolve():
        name = f"{BUILTIN_PACKAGE}_{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}"
    package = sys.modules.get(name)
    if package is None:
        package = types.ModuleType(name)
        package.__path__ = [str(resolved)]
        sys.modules[name] = package
    return name


ALL_RULES = "ALL"  # `--select ALL`, as ruff spells every rule


def select_rules(
    rules: Iterable[type[Rule]], select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> list[type[Rule]]:
    """Codes or prefixes, like ruff: `--select OPT1 --ignore OPT102`; `ALL` is every rule."""
    select, ignore = list(select), list(ignore)

    def matches(rule: type[Rule], patterns: list[str]) -> bool:
        return any(rule.code.startswith(p) or rule.name == p or p == ALL_RULES for p in patterns)

    return [
        r for r in rules if (not select or matches(r, select)) and not matches(r, ignore)
    ]
