"""What the engine knows about each rule before importing it.

Importing the rules imports libcst (about 0.2 s) and every rule module. A
pre-commit run on one changed file that holds none of the rules' trigger
words needs neither, so the engine first reads each rule's declarations
(code, name, language, version, trigger words, the ops a profile times) straight from the source of
`rules/*/rule.py` with Python's `ast`, and imports the rules only for a file that
some rule wants. A rule whose declarations are not plain literals, that
derives from another rule, or that overrides `wants` is imported right away,
so the facts are never guessed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from optpatch.rule import Rule
    from optpatch.source import SourceFile

_DECLARED = ("code", "name", "language", "version", "trigger_words", "profiled_ops")


@dataclass(frozen=True)
class RuleFacts:
    code: str
    name: str
    language: str
    version: int = 1
    trigger_words: tuple[str, ...] = ()
    profiled_ops: tuple[str, ...] = ()
    package: str = ""  # the folder of the rule's package under rules/ (`opt101`): what importing it imports

    def wants(self, source: "SourceFile") -> bool:
        """`Rule.wants`, from the declarations alone."""
        if source.language != self.language:
            return False
        return not self.trigger_words or any(word in source.text for word in self.trigger_words)

    @classmethod
    def of(cls, rule) -> "RuleFacts":
        return cls(rule.code, rule.name, rule.language, rule.version, tuple(rule.trigger_words), tuple(rule.profiled_ops),
                   rule.__module__.split(".")[-2])


@cache
def rule_facts(rules_dir: Path | None = None) -> tuple[RuleFacts, ...]:
    """The facts of every rule, sorted by code, importing the rules only if their sources do not say."""
    from optpatch.rule import builtin_rules_dir, rule_modules

    found: list[RuleFacts] = []
    for path in rule_modules(rules_dir or builtin_rules_dir()):
        declared = _declared_rules(path)
        if declared is None:
            from optpatch.rule import load_rules

            return tuple(RuleFacts.of(rule) for rule in load_rules(rules_dir))
        found.extend(declared)
    return tuple(sorted(found, key=lambda facts: facts.code))


@cache
def load_rules_for(codes: frozenset[str]) -> tuple[type["Rule"], ...]:
    """The built-in Rule classes of CODES, sorted by code, importing only the packages that declare them.

    A run that selects only C++ rules then imports neither the Python rules
    nor libcst: 0.15-0.25 s before its first file (benchmarks/ruff_ratio.py
    `--floor`). A package whose facts could not be read without importing it
    is imported by `rule_facts` already.
    """
    from optpatch.rule import load_rules

    packages = frozenset(facts.package for facts in rule_facts() if facts.code in codes)
    return tuple(rule for rule in load_rules(None, packages) if rule.code in codes)


def _declared_rules(path: Path) -> list[RuleFacts] | None:
    """The rule classes of one file, or None when their facts cannot be read without running it."""
    try:
        source = path.read_bytes()
        tree = ast.parse(source, str(path))
    except (OSError, SyntaxError, ValueError):
        return None  # importing will report the problem properly
    if not _imports_rule_plainly(tree, source):
        return None  # `Rule` under another name: its subclasses cannot be recognised here
    rules = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [base.id if isinstance(base, ast.Name) else getattr(base, "attr", None) for base in node.bases]
        if "Rule" not in bases:
            if any(base and base.endswith("Rule") for base in bases):
                return None  # derived from another rule: inherited facts
            continue
        if len(bases) != 1:
            return None
        values = {}
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == "wants":
                return None
            target = _assigned_name(statement)
            if target in _DECLARED:
                try:
                    values[target] = ast.literal_eval(statement.value)
                except ValueError:
                    return None
        if not {"code", "name", "language"} <= values.keys():
            return None
        values["trigger_words"] = tuple(values.get("trigger_words", ()))
        values["profiled_ops"] = tuple(values.get("profiled_ops", ()))
        rules.append(RuleFacts(**values, package=path.parent.name))
    return rules


def _imports_rule_plainly(tree: ast.Module, source: bytes) -> bool:
    """No import binds the rule module or `Rule` itself under another name where a class base could see it."""
    for node in _module_level(tree) if b"global" not in source else ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "optpatch.rule":
            if any(alias.name == "Rule" and alias.asname for alias in node.names):
                return False
        elif isinstance(node, ast.Import) and any(alias.name == "optpatch.rule" and alias.asname for alias in node.names):
            return False
    return True


def _module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """The statements that bind module-level names: not those in function or class bodies.

    A name imported in a function binds the module's only under `global`,
    which makes the caller walk everything instead. (Walking all of the four
    rule files, ~35 KB each, was a quarter of `rule_facts`: 31 -> 23 ms.)
    """
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            pending.extend(getattr(node, field, ()))


def _assigned_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
        return statement.target.id
    return None
