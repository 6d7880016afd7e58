"""Tensor subclasses that intercept torch calls: where `zeros` and `empty` may not be interchangeable.

A class with `__torch_dispatch__` or `__torch_function__` sees every torch
call made on its instances, and may implement one op and not another: a
subclass that implements `new_zeros` and not `new_empty` turns a rewrite
that is safe for plain tensors into a `NotImplementedError`. A rule that
rewrites a call on a receiver that may be such an instance (`t.new_zeros`,
`torch.zeros_like(t)`, `torch.zeros_like(t).to(d)`) asks `dispatch_subclasses`
whether the scanned file, or a module of the same project that it imports,
defines one. A factory with no tensor argument (`torch.zeros(n)`) reaches no
subclass: only a mode (`TorchDispatchMode`) would see it, and modes are not
tracked here.

Imported modules are found the way Python would find them inside the
scanned root: a relative import from the file's package, an absolute one
from any directory between the file and the root (a `src/` layout
included), for the module and for each imported name that may be a
submodule. They are read as text, never imported; a file whose text has no
`__torch_dispatch__` or `__torch_function__` definition is not parsed. Every
file read is recorded in the unit's `inputs` with its SHA-256, so the result
cache re-analyses the scanned file when one of them changes. A module that
appears later at a path that was missing is not noticed until the scanned
file itself changes.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

from optpatch.analysis_inputs import FileInput
from optpatch.python_frontend import PythonModule

# A definition (or an assignment) of either hook, in any class of the text: matched on the text, so a file
# that cannot have one is never parsed. Text inside a string matches too, which only makes the answer larger.
_HOOK_TEXT = re.compile(r"\bdef\s+__torch_(?:dispatch|function)__\b|\b__torch_(?:dispatch|function)__\s*=")
_HOOKS = frozenset({"__torch_dispatch__", "__torch_function__"})


@dataclass(frozen=True)
class DispatchSubclass:
    """A class that defines `__torch_dispatch__` or `__torch_function__`, where the analysis found it."""

    name: str  # the class's name; "" when the file holding it could not be parsed
    path: str  # relative to the scanned root, forward slashes
    line: int  # 0 when unknown

    def describe(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"`{self.name}` ({where})" if self.name else f"a class in {where}"


def dispatch_subclasses(module: PythonModule) -> tuple[DispatchSubclass, ...]:
    """The classes with a torch dispatch hook in `module`'s file and in the project modules it imports.

    Computed once per module; each other file read is added to `module.inputs`.
    """
    found = _BY_MODULE.get(module)
    if found is None:
        found = _BY_MODULE[module] = _find(module)
    return found


def receiver_caution(module: PythonModule, operation: str) -> str | None:
    """Why a rewrite of `operation` on a receiver that may be a subclass needs a validation run; None if none is defined."""
    subclasses = dispatch_subclasses(module)
    if not subclasses:
        return None
    named = ", ".join(subclass.describe() for subclass in subclasses[:2]) + (" and others" if len(subclasses) > 2 else "")
    return (f"{named} defines a torch dispatch hook: if the receiver is such a tensor subclass, it may implement "
            f"{operation} and not its replacement, so this needs a validation run")


_BY_MODULE: "weakref.WeakKeyDictionary[PythonModule, tuple[DispatchSubclass, ...]]" = weakref.WeakKeyDictionary()


def _find(module: PythonModule) -> tuple[DispatchSubclass, ...]:
    source = module.source
    tree = module.screen.tree if module.screen is not None else _parse(source.text)
    found: list[DispatchSubclass] = []
    if _HOOK_TEXT.search(source.text):
        found += _classes_in(tree, source.rel)
    if tree is None or source.path is None:
        return tuple(found)
    root = _root_of(source.path, source.rel)
    if root is None:
        return tuple(found)
    for path in _imported_files(tree, source.path.parent, root):
        if path == source.path.absolute():
            continue
        facts = _file_facts(path)
        if facts is None:
            continue
        digest, has_hook = facts
        module.inputs.append(FileInput(str(path), digest))
        if has_hook:
            rel = path.relative_to(root).as_posix()
            found += _classes_in(_parse(path.read_text(encoding="utf-8", errors="replace")), rel)
    return tuple(dict.fromkeys(found))


def _classes_in(tree: ast.Module | None, rel: str) -> list[DispatchSubclass]:
    """The classes of `tree` whose body defines or assigns a dispatch hook; an unparsable file counts as one."""
    if tree is None:
        return [DispatchSubclass("", rel, 0)]
    found = []
    for node in ast.walk(tree):
        if type(node) is ast.ClassDef and any(_defines_hook(statement) for statement in node.body):
            found.append(DispatchSubclass(node.name, rel, node.lineno))
    return found or [DispatchSubclass("", rel, 0)]  # the text names a hook where `ast` sees no class: count it


def _defines_hook(statement: ast.stmt) -> bool:
    kind = type(statement)
    if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
        return statement.name in _HOOKS
    if kind is ast.Assign:
        return any(type(target) is ast.Name and target.id in _HOOKS for target in statement.targets)
    if kind is ast.AnnAssign:
        return type(statement.target) is ast.Name and statement.target.id in _HOOKS
    return False


def _parse(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _root_of(path: Path, rel: str) -> Path | None:
    """The scanned root: `path` without the parts of `rel`."""
    parts = PurePosixPath(rel).parts
    absolute = path.absolute()
    if len(absolute.parts) < len(parts) or absolute.parts[-len(parts):] != parts:
        return None
    return absolute.parents[len(parts) - 1]


def _imported_files(tree: ast.Module, directory: Path, root: Path) -> Iterator[Path]:
    """The files inside `root` that the imports of `tree` (in any scope) may load, each once."""
    directory = directory.absolute()
    # Absolute imports resolve from any directory between the file and the root: a package at the root,
    # or under `src/`, or a script's own directory.
    search = [directory, *(parent for parent in directory.parents if parent.is_relative_to(root))]
    seen: set[Path] = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Import:
            candidates = (_module_files(base, alias.name.split(".")) for alias in node.names for base in search)
        elif kind is ast.ImportFrom:
            if node.level:
                base = directory
                for _ in range(node.level - 1):
                    base = base.parent
                if not base.is_relative_to(root):
                    continue
                bases = [base]
            else:
                bases = search
            parts = node.module.split(".") if node.module else []
            names = [alias.name for alias in node.names if alias.name != "*"]
            candidates = (
                _module_files(base, target) for base in bases
                for target in ([parts] if parts else []) + [parts + [name] for name in names]
            )
        else:
            continue
        for files in candidates:
            for path in files:
                if path not in seen:
                    seen.add(path)
                    if path.is_file():
                        yield path


def _module_files(base: Path, parts: list[str]) -> tuple[Path, ...]:
    """`base/a/b.py` and `base/a/b/__init__.py` for the module `a.b`."""
    if not parts or not all(parts):
        return ()
    package = base.joinpath(*parts)
    return package.with_name(package.name + ".py"), package / "__init__.py"


# Per process: (mtime, size) -> (SHA-256, defines a hook?) of each project file read, so that the many files
# of a project that import the same module read it once. A file changed in place gets a new mtime or size.
_FACTS: dict[Path, tuple[tuple[int, int], str, bool]] = {}


def _file_facts(path: Path) -> tuple[str, bool] | None:
    try:
        status = os.stat(path)
        stamp = (status.st_mtime_ns, status.st_size)
        known = _FACTS.get(path)
        if known is not None and known[0] == stamp:
            return known[1], known[2]
        data = path.read_bytes()
    except OSError:
        return None
    has_hook = _HOOK_TEXT.search(data.decode("utf-8", errors="replace")) is not None
    facts = _FACTS[path] = (stamp, hashlib.sha256(data).hexdigest(), has_hook)
    return facts[1], facts[2]
