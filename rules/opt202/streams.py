"""Whether the copy and everything that uses its result stay on one stream: the current stream of the device.

The copy is queued on the device's current stream, as `.to()` was. A
function that switches streams or devices keeps the site; a raw pointer of
the result handed to a kernel launched on another stream keeps it too. Uses
shown to stay on the stream (metadata, torch ops, launches on
`getCurrentCUDAStream()` of the device) are proof; any other use is a doubt.
"""

from __future__ import annotations

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import CppUnit, CursorKind, Node, Token, kernel_name, matching_bracket, split_top_level

from .cuda_device import guard_on
from .site import Site

_DATA_POINTER_METHODS = frozenset({"data_ptr", "mutable_data_ptr", "const_data_ptr"})
# Anything that queues work on a stream other than the current one, or changes the device.
_OTHER_STREAM_WORDS = frozenset({
    "getStreamFromPool", "getStreamFromExternal", "CUDAStreamGuard", "OptionalCUDAStreamGuard",
    "CUDAMultiStreamGuard", "setCurrentCUDAStream", "cudaStreamCreate", "cudaStreamCreateWithFlags",
    "cudaStreamCreateWithPriority", "record_stream", "cudaSetDevice", "cudaHostRegister",
})


def other_stream_use(unit: CppUnit, function: Node) -> Kept | None:
    """Kept when `function` queues work on another stream, changes the device or registers pinned memory."""
    for token in unit.tokens_in(function.start, function.end):
        if token.spelling in _OTHER_STREAM_WORDS:
            return Kept(
                f"L{unit.line_of(token.start)}: `{token.spelling}`: this function uses another stream, "
                "device or pinned registration", KeepCategory.OTHER_STREAM
            )
    return None


def result_uses(unit: CppUnit, site: Site, function: Node) -> Kept | tuple[list[str], list[str]]:
    """Proof lines for uses that stay on the copy's stream, and doubts for those that may not; Kept at the
    first raw pointer handed to a kernel on another stream."""
    name = site.result.spelling
    tokens = unit.tokens
    start = unit.token_index(site.statement.end)
    end = unit.token_index(function.end)
    fine, doubts = [], []
    for index in range(start, end):
        token = tokens[index]
        if token.spelling != name or token.kind != "identifier":
            continue
        previous = tokens[index - 1].spelling
        if previous in (".", "->", "::"):
            continue
        line = unit.line_of(token.start)
        if tokens[index + 1].spelling in (".", "->") and index + 2 < end:
            method = tokens[index + 2].spelling
            if method in _DATA_POINTER_METHODS:
                launch = _launch_stream(unit, index, start, site, function)
                if launch is None:
                    doubts.append(f"L{line}: the raw pointer `{name}.{method}()` goes somewhere other than a kernel launch")
                    continue
                same_stream, description = launch
                if not same_stream:
                    return Kept(f"L{line}: {description}", KeepCategory.OTHER_STREAM)
                fine.append(f"L{line}: `{name}.{method}` goes to {description}")
                continue
            fine.append(f"L{line}: `{name}.{method}` runs on the tensor's current stream")
            continue
        op = torch_op_taking(unit, token.start)
        if op:
            fine.append(f"L{line}: a torch op (`{op}`) takes `{name}`: it runs on the tensor's current stream")
            continue
        doubts.append(f"L{line}: `{name}` is passed on or leaves the function; its users may be on another stream")
    return fine, doubts


def torch_op_taking(unit: CppUnit, offset: int) -> str:
    """The name of the torch function or Tensor method (declared by torch, as clang resolved it) whose argument
    list holds the expression at `offset`; "" when the innermost call around it is anything else."""
    calls = [
        node for node in unit.nodes
        if node.kind is CursorKind.CALL_EXPR and node.start < offset < node.end
        and any(argument.start <= offset < argument.end for argument in node.arguments())
    ]
    if not calls:
        return ""
    call = max(calls, key=lambda node: node.start)  # the innermost
    callee = unit.referenced(call)
    if callee is not None:
        return call.spelling if unit.declared_by_library(callee, ("at", "torch", "c10")) else ""
    if unit.with_headers:
        return ""
    # Without headers most of torch is unresolved: its qualified name is what is left to go by.
    index = unit.token_index(offset)
    return call.spelling or "torch op" if _is_torch_call_argument(unit.tokens, index) else ""


def _is_torch_call_argument(tokens: list[Token], index: int) -> bool:
    """`torch::op(..., name, ...)` or `at::op(...)` (not at::cuda::...)."""
    depth = 0
    for position in range(index - 1, -1, -1):
        spelling = tokens[position].spelling
        if spelling in (")", "]", "}"):
            depth += 1
        elif spelling in ("[", "{"):
            if depth == 0:
                return False
            depth -= 1
        elif spelling == "(":
            if depth == 0:
                if position >= 3 and tokens[position - 2].spelling == "::" and tokens[position - 3].spelling in ("torch", "at"):
                    return position < 4 or tokens[position - 4].spelling != "::"
                return False
            depth -= 1
        elif spelling in (";", "{"):
            return False
    return False


def _launch_stream(unit: CppUnit, index: int, start: int, site: Site, function: Node) -> tuple[bool, str] | None:
    """For a raw pointer at tokens[index]: None when it is not a kernel launch argument, else
    (whether the launch is on the copy's stream, a description saying which stream)."""
    tokens = unit.tokens
    depth = 0
    for position in range(index - 1, start - 1, -1):
        spelling = tokens[position].spelling
        if spelling in (")", "]", "}"):
            depth += 1
        elif spelling in ("(", "[", "{"):
            if depth == 0:
                if spelling != "(" or tokens[position - 1].spelling != ">>>":
                    return None
                return _launch_config(unit, position - 1, site, function)
            depth -= 1
        elif spelling == ";":
            return None
    return None


def _launch_config(unit: CppUnit, close: int, site: Site, function: Node) -> tuple[bool, str]:
    tokens = unit.tokens
    opener = next((i for i in range(close - 1, -1, -1) if tokens[i].spelling == "<<<"), None)
    if opener is None:
        return False, "a kernel launch optpatch cannot read"
    kernel = kernel_name(tokens, opener)
    config = split_top_level(tokens[opener + 1 : close])
    if len(config) < 4 or not config[3]:
        return False, f"kernel `{kernel}` is launched on the default stream, not the current one the copy uses"
    stream = config[3]
    stream_text = unit.text(stream[0].start, stream[-1].end)
    different = f"kernel `{kernel}` runs on `{stream_text}`, not shown to be the current stream of `{site.device}`"
    source = _stream_source(unit, stream, function)
    if source is None:
        return False, different
    call, arguments, offset = source
    launch = f"kernel `{kernel}` on `{stream_text}` = `{call}`"
    if arguments.replace(" ", "") == f"{site.device}.index()".replace(" ", ""):
        return True, launch
    if arguments.strip():
        return False, different
    if site.device_is_type:
        return True, launch + " (the current device's stream, as the copy's)"
    guard = guard_on(unit, site.device, function, offset)
    if guard is not None:
        return True, launch + f" under `{' '.join(unit.node_text(guard).split())}`"
    return False, different


def _stream_source(unit: CppUnit, stream: list[Token], function: Node) -> tuple[str, str, int] | None:
    """(`getCurrentCUDAStream(...)` text, its argument text, its offset) behind a launch's stream."""
    tokens = stream
    if len(stream) == 1 and stream[0].kind == "identifier":
        declaration = next(
            (
                n for n in function.walk()
                if n.kind is CursorKind.VAR_DECL and n.spelling == stream[0].spelling and n.start < stream[0].start
            ),
            None,
        )
        if declaration is None:
            return None
        tokens = unit.tokens_in(declaration.start, declaration.end)
    for index, token in enumerate(tokens):
        if token.spelling == "getCurrentCUDAStream" and index + 1 < len(tokens) and tokens[index + 1].spelling == "(":
            close = matching_bracket(tokens, index + 1)
            if close is None:
                return None
            arguments = unit.text(tokens[index + 1].end, tokens[close].start)
            start = index - 4 if index >= 4 and tokens[index - 1].spelling == "::" else index
            return unit.text(tokens[start].start, tokens[close].end), arguments, token.start
    return None
