"""A C++/CUDA file's part of the project's call graph, read from its text: its functions, the names each calls, and
the Python names it binds.

A C++ finding runs as often as Python calls into it: `FusedAdam.step` hands
`amp_C.multi_tensor_adam` to an applier every step, `PYBIND11_MODULE`
binds that name to `multi_tensor_adam_cuda`, and the launcher holding the
finding is that function. So each C++ file gives `call_graph` what a Python
file does (`FileCalls`), read without a parser: most C++ files are never
parsed (no rule has a candidate in them), and the graph needs all of them.

What it reads, after blanking comments, strings and preprocessor lines:

- **functions**: a `{` block at namespace, `extern "C"` or class scope whose
  head ends `name(...)` (with qualifiers, a trailing return type or a
  constructor's initialisers after it); `name` is its last `::` part.
  Lambdas and blocks inside a function belong to it.
- **calls**: in a function's body, each `name(`, `name<...>(` and kernel
  launch `name<<<`, keywords and casts left out.
- **bindings**: `.def("name", ...)` and `.impl("name", ...)` in the body of
  `PYBIND11_MODULE(module, m)`, of `TORCH_LIBRARY(ns, m)` (and its `_IMPL`
  and `_FRAGMENT` forms: Python calls `torch.ops.ns.name`), or of a helper
  that fills a module it is handed. The Python name is the string's leading
  identifier (an operator schema's `name(Tensor x) -> Tensor` too); what it
  runs is every function the rest of the call names: `&f`, `f`,
  `TORCH_FN(f)`, `py::overload_cast<...>(&f)`, or the calls of a lambda.
- **registry entries**: `REGISTER_X(key, ..., target)` at namespace scope
  (mmcv's `REGISTER_DEVICE_IMPL(nms_impl, CUDA, nms_cuda)`, PyTorch's
  `REGISTER_DISPATCH(stub, &kernel)`): calling `key` runs `target`.

Like the Python graph it under-approximates: a call through a pointer, a
virtual, or a name defined in several files is left out, so a function it
cannot reach is "unreached", never wrongly "per-step". One pass of a few
regular expressions over the text: linear in its bytes.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

# Comments, string and character literals, and preprocessor lines (with their continuations): blanked before braces
# are counted. Strings are kept apart, since bindings are named by them.
_NOISE = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*",
    re.S | re.M,
)
_BRACES = re.compile(r"[{};]")
# `name (`, `name<...> (`, `name<<<`: the name's last `::` part; a template argument list without braces or parens.
_CALL = re.compile(r"(?<!\w)([A-Za-z_]\w*+)(?:\s*+<[^;{}()<>]*+(?:<[^;{}()<>]*+>[^;{}()<>]*+)*+>)?\s*+(?:\(|<<<)")
_HEAD_NAME = re.compile(r"([A-Za-z_]\w*)\s*\($")
_REFERENCE = re.compile(r"&\s*((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)")
_TORCH_FN = re.compile(r"\bTORCH_FN\s*\(\s*((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)\s*\)")
_FIRST_ARGUMENT = re.compile(r"\s*,\s*((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)\s*(?:,|$)")
_NEWLINE = re.compile(r"\n")
_BRACKETS = re.compile(r"[()\[\]{}]")
_OPENER = {")": "(", "]": "[", "}": "{"}
# `.def("name", ...)`, `.impl("ns::name", ...)`, `.impl(TORCH_SELECTIVE_NAME("ns::name"), ...)` (torchvision's)
_DEFINES = re.compile(r"\.\s*(?:def|impl)\s*\(\s*(TORCH_SELECTIVE_(?:NAME|SCHEMA)\s*\()?$")
_LEADING_NAME = re.compile(r'"(?:[A-Za-z_]\w*::)?([A-Za-z_]\w*)')
_TAKES_A_MODULE = re.compile(r"\b(?:module_?|Library)\s*&")
# torch's registrars, and their forms for the stable ABI (`STABLE_TORCH_LIBRARY_IMPL(ns, CUDA, m)`)
_TORCH_REGISTRARS = ("TORCH_LIBRARY", "TORCH_LIBRARY_IMPL", "TORCH_LIBRARY_FRAGMENT", "TORCH_LIBRARY_EXPAND")
_REGISTRAR_NAMES = frozenset({"PYBIND11_MODULE", *_TORCH_REGISTRARS, *(f"STABLE_{name}" for name in _TORCH_REGISTRARS)})
_REGISTRARS = re.compile(rf"^({'|'.join(sorted(_REGISTRAR_NAMES, key=len, reverse=True))})\s*\(\s*([A-Za-z_]\w*)")
_TYPE_KEYWORDS = re.compile(r"\b(?:class|struct|union|enum|namespace)\b")
# Names before a `(` that are no call of a function: statements, operators, casts, attributes, the assertion and
# dispatch macros (their bodies are read: a dispatch's lambda is the function's own code).
_NOT_CALLS = frozenset({
    "if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "catch", "throw", "new", "delete",
    "static_cast", "dynamic_cast", "const_cast", "reinterpret_cast", "static_assert", "alignas", "noexcept",
    "typeid", "defined", "__launch_bounds__", "__attribute__", "__declspec", "__align__", "do", "else", "case",
    "operator", "template", "typename", "using", "auto", "void", "int", "float", "double", "char", "bool",
    "TORCH_CHECK", "AT_ASSERTM", "AT_ASSERT", "TORCH_INTERNAL_ASSERT", "C10_CUDA_CHECK", "C10_CUDA_KERNEL_LAUNCH_CHECK",
    "TORCH_FN", "TORCH_BOX", "overload_cast", "assert",
})


# googletest's: a test's body, which the graph reads as a function of that name (frequency.py: a test's, one-time)
TEST_MACROS = frozenset({"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"})


class Binding(NamedTuple):
    """A name this file registers, and the C++ functions the registration names: one Python calls (`registrar`
    PYBIND11_MODULE, TORCH_LIBRARY..., or "" for a helper), or a device registry's key (`registry`)."""

    registrar: str  # "PYBIND11_MODULE", "TORCH_LIBRARY", ... or "" for a helper handed the module
    module: str  # as the registrar names it: `amp_C`, `TORCH_EXTENSION_NAME`, a namespace; "" for a helper
    name: str  # the Python name
    line: int
    targets: tuple[str, ...]  # the C++ names it runs

    @property
    def torch_ops(self) -> bool:
        return "TORCH_LIBRARY" in self.registrar

    @property
    def registry(self) -> bool:
        """A device registry's entry, not a name Python calls: `REGISTER_DEVICE_IMPL(nms_impl, CUDA, nms_cuda)` (mmcv),
        `REGISTER_DISPATCH(stub, &kernel)` (PyTorch): calling `name` runs `targets`."""
        return self.registrar.startswith("REGISTER_")


class Function(NamedTuple):
    name: str
    line: int  # of its name
    end_line: int  # of its closing brace
    calls: tuple[tuple[str, int], ...]  # (name, line) of each name it calls, the first call of each


class CppCalls(NamedTuple):
    functions: tuple[Function, ...]
    bindings: tuple[Binding, ...]


def index_text(text: str) -> CppCalls:
    """The functions of a C++/CUDA text, their calls, and the Python names it binds."""
    strings: list[tuple[int, str]] = []

    def blank(match: re.Match) -> str:
        found = match.group()
        if found[0] == '"':
            strings.append((match.start(), found))
        if "\n" not in found:
            return " " * len(found)
        return "\n".join(" " * len(part) for part in found.split("\n"))

    code = _NOISE.sub(blank, text)
    lines = [match.start() for match in _NEWLINE.finditer(code)]

    def line_of(offset: int) -> int:
        return bisect_right(lines, offset - 1) + 1

    functions: list[Function] = []
    regions: dict[int, list] = {}  # offset of a registering body's `{` -> [its `}`'s, registrar, module]
    # (kind, offset of `{`, name, where its head starts): "scope", "function", "block" (in a function), "inline" (a
    # braced list in an expression at scope level: `Model() : Base(torch::zeros({0})) {`)
    stack: list[tuple[str, int, str, int]] = []
    registers = "REGISTER_" in code
    registry: list[Binding] = []
    statement_start = 0
    for match in _BRACES.finditer(code):
        char, at = match.group(), match.start()
        top = stack[-1][0] if stack else "scope"
        inside = top != "scope"  # in a function, a block of one, or a braced list in a head
        if top == "inline" and char != "}":
            if char == "{":
                stack.append(("inline", at, "", statement_start))
            continue
        if char == ";":
            if registers and not inside:
                entry = _registry_entry(code[statement_start:at])
                if entry is not None:
                    registrar, key, target = entry
                    registry.append(Binding(registrar, "", key, line_of(statement_start + 1), (target,)))
            statement_start = at + 1
        elif char == "{":
            if inside:
                stack.append(("block", at, "", at))
                statement_start = at + 1
                continue
            head = code[statement_start:at]
            if head.count("(") > head.count(")"):
                stack.append(("inline", at, "", statement_start))  # the statement goes on after its `}`
                continue
            name = _function_name(head)
            stack.append(("function", at, name, statement_start) if name else ("scope", at, "", statement_start))
            if name:
                registrar = _REGISTRARS.match(head.strip())
                if registrar is not None:
                    regions[at] = [-1, registrar.group(1), registrar.group(2)]
                elif _TAKES_A_MODULE.search(head):
                    regions[at] = [-1, "", ""]
            statement_start = at + 1
        else:  # "}"
            if stack:
                kind, start, name, head_start = stack.pop()
                if kind == "inline":
                    continue  # the statement around it goes on
                if kind == "function":
                    functions.append(Function(name, line_of(_name_offset(code, head_start, start)), line_of(at),
                                              _calls(code, start, at, line_of)))
                    if start in regions:
                        regions[start][0] = at
            statement_start = at + 1
    bindings = _bindings(code, strings, sorted((start, *rest) for start, rest in regions.items()), line_of) + tuple(registry)
    functions.sort(key=lambda function: function.line)
    return CppCalls(tuple(functions), bindings)


_REGISTRY_ENTRY = re.compile(r"\s*(REGISTER_\w*)\s*\((.*)\)\s*", re.S)
_NAME_ARGUMENT = re.compile(r"\s*&?\s*(?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*)\s*")


def _registry_entry(statement: str) -> tuple[str, str, str] | None:
    """`REGISTER_X(key, ..., target)` at namespace scope: (the macro, the key's name, the target's), where both are
    plain names (`&ns::f` too)."""
    found = _REGISTRY_ENTRY.fullmatch(statement)
    if found is None:
        return None
    arguments = found.group(2).split(",")
    key, target = _NAME_ARGUMENT.fullmatch(arguments[0]), _NAME_ARGUMENT.fullmatch(arguments[-1])
    if len(arguments) < 2 or key is None or target is None:
        return None
    return found.group(1), key.group(1), target.group(1)


def _function_name(head: str) -> str | None:
    """The name a block's head defines as a function, or None (a namespace, a class, an initialiser, a statement)."""
    head = _without_templates(head.strip())
    if not head or head.endswith(("=", ",")) or _TYPE_KEYWORDS.search(head.split("(", 1)[0]):
        return None
    # A constructor's initialisers, `) : a(x), b(y)`, and a trailing return type or qualifiers follow the parameters:
    # the parameter list is the first top-level `(...)` after a name that is no attribute or macro of qualifiers.
    depth = 0
    for index, char in enumerate(head):
        if char == "(":
            if depth == 0:
                found = _HEAD_NAME.search(head[: index + 1])
                if found is not None and found.group(1) not in _NOT_CALLS and not _is_macro(found.group(1)):
                    return found.group(1)
            depth += 1
        elif char == ")":
            depth -= 1
    return None


def _without_templates(head: str) -> str:
    """HEAD without its leading `template <...>` parameter lists (`template <class T>` declares no class)."""
    while head.startswith("template"):
        opened = head.find("<")
        if opened < 0:
            return head
        depth = 0
        for index in range(opened, len(head)):
            depth += {"<": 1, ">": -1}.get(head[index], 0)
            if depth == 0:
                head = head[index + 1 :].lstrip()
                break
        else:
            return head
    return head


def _is_macro(name: str) -> bool:
    """An upper-case name before a `(` in a head is a macro of attributes (`C10_LAUNCH_BOUNDS_1(256)`), except the
    registrars, whose bodies hold bindings."""
    return name.isupper() and name not in _REGISTRAR_NAMES and name not in TEST_MACROS


def _name_offset(code: str, start: int, brace: int) -> int:
    """Where the head from START to the `{` at BRACE names the function: the `(` of its parameters, roughly."""
    head = code[start:brace]
    stripped = head.lstrip()
    paren = stripped.find("(")
    return start + (len(head) - len(stripped)) + (paren if paren >= 0 else 0)


def _calls(code: str, start: int, end: int, line_of) -> tuple[tuple[str, int], ...]:
    found: dict[str, int] = {}
    for match in _CALL.finditer(code, start, end):
        name = match.group(1)
        if name not in _NOT_CALLS and name not in found:
            found[name] = line_of(match.start())
    return tuple(found.items())


def _bindings(code: str, strings: list[tuple[int, str]], regions: list[tuple], line_of) -> tuple[Binding, ...]:
    """The `.def("name", ...)` and `.impl("name", ...)` calls in REGIONS (start, end, registrar, module), the
    registering bodies, in order: strings come in order too, so one pass walks both."""
    if not regions:
        return ()
    found: list[Binding] = []
    closing = _pairs(code)
    index = 0
    for offset, literal in strings:
        while index < len(regions) and regions[index][1] < offset:
            index += 1  # past the bodies that end before this string
        if index == len(regions) or not regions[index][0] < offset:
            continue
        region = regions[index][2:]
        before = code[max(0, offset - 64):offset].rstrip()
        defines = _DEFINES.search(before)
        if defines is None:
            continue
        name = _LEADING_NAME.match(literal)
        if name is None:
            continue
        rest_start = offset + len(literal)
        opened = code.rfind("(", 0, offset)
        if defines.group(1):  # the `(` of `.impl(`, before the macro's
            opened = code.rfind("(", 0, opened)
        rest_end = closing.get(opened)
        if rest_end is None:  # an unclosed call: up to the end of its line (no scan runs on to the file's end)
            line_end = code.find("\n", rest_start)
            rest_end = line_end if line_end >= 0 else len(code)
        rest = code[rest_start:rest_end]
        targets = dict.fromkeys(
            [_last_part(m.group(1)) for m in _REFERENCE.finditer(rest)]
            + [_last_part(m.group(1)) for m in _TORCH_FN.finditer(rest)]
            + [m.group(1) for m in _CALL.finditer(rest) if m.group(1) not in _NOT_CALLS]
        )
        first = _FIRST_ARGUMENT.match(rest)
        if first is not None:
            targets.setdefault(_last_part(first.group(1)))
        registrar, module = region
        found.append(Binding(registrar, module, name.group(1), line_of(offset), tuple(targets)))
    return tuple(found)


def _last_part(qualified: str) -> str:
    """`ns :: f` -> `f`: the graph knows C++ functions by their last name."""
    return qualified.rsplit("::", 1)[-1].strip()


def _pairs(code: str) -> dict[int, int]:
    """Each opening bracket's offset -> its closing one's, in one pass (an unbalanced text pairs what it can)."""
    pairs: dict[int, int] = {}
    opened: list[tuple[str, int]] = []
    for match in _BRACKETS.finditer(code):
        char = match.group()
        if char in "([{":
            opened.append((char, match.start()))
            continue
        wanted = _OPENER[char]
        while opened and opened[-1][0] != wanted:
            opened.pop()  # left open: a `}` closes the block around it
        if opened:
            pairs[opened.pop()[1]] = match.start()
    return pairs
