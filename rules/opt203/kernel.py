"""A kernel launch as the first use: the output must reach the kernel whole, unpadded, on every path; a kernel
defined in this file is read, and kept when it accumulates into the output, reads it, hands it on, or
returns early other than by a guard on a size of the output. The grid's coverage is left to `--validate`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from optpatch.rule import KeepCategory, Kept, Tier
from optpatch.rule.cpp import CppUnit, CursorKind, Node, Token, kernel_name, matching_bracket

from .allocation import Allocation, padded_size

POINTER_METHODS = frozenset({"data_ptr", "mutable_data_ptr", "data"})
ACCESSOR_METHODS = frozenset({"accessor", "packed_accessor32", "packed_accessor64", "packed_accessor"})
_KERNEL_ARGUMENT_METHODS = POINTER_METHODS | ACCESSOR_METHODS
COMPOUND_ASSIGNMENTS = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_ATOMICS = re.compile(r"^atomic[A-Z]\w*$")


@dataclass(frozen=True)
class Launch:
    """A kernel launch `kernel<<<...>>>(arguments)` with the allocation's data among its arguments."""

    kernel: str
    arguments: list[list[Token]]  # the kernel's arguments
    position: int  # which of them holds the reference


def launch_of(unit: CppUnit, index: int) -> Launch | None:
    """The kernel launch whose argument list holds the reference at tokens[index]."""
    tokens = unit.tokens
    depth = 0
    for position in range(index - 1, -1, -1):
        spelling = tokens[position].spelling
        if spelling in (")", "]", "}"):
            depth += 1
        elif spelling in ("(", "[", "{"):
            if depth == 0:
                if spelling != "(" or position == 0 or tokens[position - 1].spelling != ">>>":
                    return None
                close = matching_bracket(tokens, position)
                opener = next((i for i in range(position - 2, -1, -1) if tokens[i].spelling == "<<<"), None)
                if close is None or opener is None:
                    return None
                arguments = _launch_arguments(tokens[position + 1 : close])
                held = next((k for k, argument in enumerate(arguments)
                             if any(t.start == tokens[index].start for t in argument)), None)
                return None if held is None else Launch(kernel_name(tokens, opener), arguments, held)
            depth -= 1
        elif spelling == ";":
            return None
    return None


def _launch_arguments(tokens: list[Token]) -> list[list[Token]]:
    """A launch's arguments, split at the commas outside any brackets, the template arguments of an accessor or a
    data pointer (`x.packed_accessor32<float, 2, at::RestrictPtrTraits>()`) counted as brackets: split there, one
    argument was three, and every argument after it had the wrong parameter."""
    parts: list[list[Token]] = [[]]
    depth = angles = 0
    for index, token in enumerate(tokens):
        spelling = token.spelling
        if spelling in ("(", "[", "{", "<<<"):
            depth += 1
        elif spelling in (")", "]", "}", ">>>"):
            depth -= 1
        elif spelling == "<" and (angles or index >= 2 and tokens[index - 1].spelling in _KERNEL_ARGUMENT_METHODS
                                  and tokens[index - 2].spelling in (".", "->")):
            angles += 1
        elif angles and spelling in (">", ">>"):
            angles = max(0, angles - len(spelling))
        if spelling == "," and depth == 0 and angles == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def kernel_use(unit: CppUnit, allocation: Allocation, use: Node, launch: Launch,
               unconditional: bool) -> Kept | tuple[Tier, list[str]]:
    """The `validate` proof of a launch that writes the output as its first use, or the first thing that keeps it."""
    line = unit.line_of(use.start)
    where = f"L{line}: `{allocation.name}`"
    if not unconditional:
        return Kept(f"{where} goes to kernel `{launch.kernel}` on a path that may not run (a branch, a loop): "
                    "elsewhere it is read as zeros", KeepCategory.CONDITION)
    argument = [t.spelling for t in launch.arguments[launch.position]]
    if not whole_tensor_argument(argument, allocation.name):
        return Kept(f"{where} reaches kernel `{launch.kernel}` as `{''.join(argument)}`: not the whole tensor's data",
                    KeepCategory.PASSED)
    padded = padded_size(unit, allocation.call)
    if padded is not None:
        return padded
    proof = [f"{where} goes to kernel `{launch.kernel}` (argument {launch.position + 1}) as its first use"]
    definitions = _kernel_definitions(unit, launch.kernel)
    if len(definitions) != 1:
        where = "is not defined in this file" if not definitions else (
            f"is defined {len(definitions)} times in this file (overloads or specialisations): "
            "which one runs is not resolved")
        proof.append(f"kernel `{launch.kernel}` {where}: whether it writes every element is left "
                     "to --validate (with --build, under poisoned memory)")
        return Tier.VALIDATE, proof
    kernel = definitions[0]
    parameters = [c for c in kernel.children if c.kind is CursorKind.PARM_DECL]
    if launch.position >= len(parameters):
        return Kept(f"kernel `{launch.kernel}`'s parameters do not match its launch", KeepCategory.UNRESOLVED)
    parameter = parameters[launch.position].spelling
    body = kernel.body()
    if body is None:
        return Kept(f"kernel `{launch.kernel}` has no body here", KeepCategory.UNRESOLVED)
    writes = _kernel_writes(unit, launch, body, parameter, parameters, allocation)
    if isinstance(writes, Kept):
        return writes
    proof += writes
    proof.append("whether the grid covers every element is left to --validate (with --build, under poisoned memory)")
    return Tier.VALIDATE, proof


def whole_tensor_argument(argument: list[str], name: str) -> bool:
    """`out.data_ptr<T>()`, `(T*)out.data_ptr()`, `reinterpret_cast<T*>(out.data_ptr())`, `out.packed_accessor32<...>()`."""
    if name not in argument:
        return False
    at = argument.index(name)
    if argument[at + 1 : at + 2] != ["."] or at + 2 >= len(argument) or argument[at + 2] not in _KERNEL_ARGUMENT_METHODS:
        return False
    rest = argument[at + 3 :]
    if rest and rest[0] == "<":
        depth, k = 0, 0
        for k, spelling in enumerate(rest):
            depth += {"<": 1, ">": -1, ">>": -2}.get(spelling, 0)
            if depth <= 0:
                break
        rest = rest[k + 1 :]
    if rest[:2] != ["(", ")"]:
        return False
    trailing = rest[2:]
    return all(t == ")" for t in trailing) and "+" not in argument[:at] and "-" not in argument[:at]


def _kernel_definitions(unit: CppUnit, name: str) -> list[Node]:
    """The `__global__` functions spelled NAME that this file defines (with a body)."""
    return [
        n for n in unit.functions_named(name)
        if n.body() is not None and any(c.kind is CursorKind.CUDAGLOBAL_ATTR for c in n.children)
    ]


def _kernel_writes(unit: CppUnit, launch: Launch, body: Node, parameter: str, parameters: list[Node],
                   allocation: Allocation) -> Kept | list[str]:
    """Proof lines for a kernel that only assigns to `parameter[...]`; the keep of the first other use of it."""
    tokens = unit.tokens_in(body.start, body.end)
    name = f"kernel `{launch.kernel}`"
    writes = 0
    for index, token in enumerate(tokens):
        line = unit.line_of(token.start)
        if _ATOMICS.match(token.spelling) and _mentions(tokens, index + 1, parameter):
            return Kept(f"L{line}: {name} accumulates into `{parameter}` with `{token.spelling}`: it reads the zeros",
                        KeepCategory.READ_MODIFY_WRITE)
        if token.spelling != parameter or token.kind != "identifier":
            continue
        end = _subscripts_end(tokens, index)
        if end == index + 1:
            return Kept(f"L{line}: {name} uses `{parameter}` other than by element (passed on, or pointer "
                        "arithmetic): its writes are not seen", KeepCategory.PASSED)
        after = tokens[end].spelling if end < len(tokens) else ""
        if after in COMPOUND_ASSIGNMENTS or after in ("++", "--") or tokens[index - 1].spelling in ("++", "--"):
            return Kept(f"L{line}: {name} updates `{parameter}[...]` with `{after or tokens[index - 1].spelling}`: "
                        "it reads the zeros", KeepCategory.READ_MODIFY_WRITE)
        if after != "=":
            return Kept(f"L{line}: {name} reads `{parameter}[...]`", KeepCategory.READ_BEFORE_WRITE)
        writes += 1
    if not writes:
        return Kept(f"{name} never writes `{parameter}`", KeepCategory.PARTIAL_WRITE)
    guard = _early_returns(unit, launch, body, parameters, allocation)
    if isinstance(guard, Kept):
        return guard
    return [f"{name} only assigns to `{parameter}[...]` ({writes} place{'s' if writes > 1 else ''}): no read, "
            "no accumulation"] + guard


def _mentions(tokens: list[Token], open_at: int, name: str) -> bool:
    if open_at >= len(tokens) or tokens[open_at].spelling != "(":
        return False
    close = matching_bracket(tokens, open_at)
    return close is not None and any(t.spelling == name for t in tokens[open_at:close])


def _subscripts_end(tokens: list[Token], index: int) -> int:
    """The token after `name[...][...]` (index + 1 when no subscript follows)."""
    end = index + 1
    while end < len(tokens) and tokens[end].spelling == "[":
        close = matching_bracket(tokens, end)
        if close is None:
            return index + 1
        end = close + 1
    return end


def _early_returns(unit: CppUnit, launch: Launch, body: Node, parameters: list[Node],
                   allocation: Allocation) -> Kept | list[str]:
    """A `return` is allowed only as a leading guard `if (i >= bound) return;` among the body's own statements,
    whose bound, when a parameter, is launched with a size of the output."""
    proof = []
    guards: list[Node] = []
    for statement in body.children:
        if statement.kind is not CursorKind.IF_STMT:
            continue
        spelled = [t.spelling for t in unit.tokens_in(statement.start, statement.end)]
        if spelled[-1:] != ["return"] or "else" in spelled or spelled.count("return") != 1:
            continue  # the statement's extent ends before its `;`
        guards.append(statement)
        condition = spelled[2 : spelled.index(")", 2)] if ")" in spelled else []
        bounded = _guard_bound(unit, launch, condition, parameters, allocation, statement)
        if isinstance(bounded, Kept):
            return bounded
        proof += bounded
    for node in body.walk():
        if node.kind is CursorKind.RETURN_STMT and not any(guard.start <= node.start < guard.end for guard in guards):
            return Kept(f"L{unit.line_of(node.start)}: kernel `{launch.kernel}` returns early: threads that leave may "
                        "not write their elements", KeepCategory.PARTIAL_WRITE)
    return proof


def _guard_bound(unit: CppUnit, launch: Launch, condition: list[str], parameters: list[Node], allocation: Allocation,
                 statement: Node) -> Kept | list[str]:
    """`i >= n` with `n` a parameter: the launch's argument for `n` must be a size of the output."""
    names = [p.spelling for p in parameters]
    if len(condition) != 3 or condition[1] not in (">=", ">") or condition[2] not in names:
        return Kept(f"L{unit.line_of(statement.start)}: kernel `{launch.kernel}` returns early on "
                    f"`{' '.join(condition)}`, not a bound on the thread's index: threads that leave may not write "
                    "their elements", KeepCategory.PARTIAL_WRITE)
    bound = condition[2]
    argument = "".join(t.spelling for t in launch.arguments[names.index(bound)])
    sizes = _output_sizes(unit, allocation)
    if argument not in sizes:
        return Kept(f"L{unit.line_of(statement.start)}: kernel `{launch.kernel}` leaves threads past `{bound}` = "
                    f"`{argument}`, not shown to be the size of `{allocation.name}`: the grid may not cover it",
                    KeepCategory.PARTIAL_WRITE)
    return [f"L{unit.line_of(statement.start)}: its guard bounds threads by `{bound}` = `{argument}`, the size of "
            f"`{allocation.name}`"]


def _output_sizes(unit: CppUnit, allocation: Allocation) -> set[str]:
    """Spellings of the output's element count or of one of its sizes: `out.numel()`, `out.size(k)`, and the
    sizes `zeros({a, b})` names (`a`, `b`, `a*b`). A guard on one dimension leaves the others to the kernel's
    loop, and the grid to --validate; a guard on anything else is evidence that they differ."""
    name = allocation.name
    spellings = {f"{name}.numel()"}
    arguments = allocation.call.arguments()
    if allocation.call.spelling == "zeros" and arguments:
        sizes = "".join(t.spelling for t in unit.tokens_in(arguments[0].start, arguments[0].end))
        if sizes.startswith("{") and sizes.endswith("}"):
            parts = sizes[1:-1].split(",")
            spellings.update(parts)
            spellings.add("*".join(parts))
            spellings.update(f"{name}.size({k})" for k in range(len(parts)))
    return spellings
