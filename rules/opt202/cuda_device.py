"""Whether the copy's device is shown to be a CUDA device before the copy, and which guard says so.

The evidence: a CUDA device type (`torch::kCUDA`), a `Device(...)` made a
CUDA one, `TORCH_CHECK(x.is_cuda())` before the copy, or a `CUDAGuard` /
`OptionalCUDAGuard` on the device in a block around it (it rejects any other
device). Without it the rewrite is not safe: on a CPU device the new code
fails where `.to()` copied.
"""

from __future__ import annotations

import re

from optpatch.rule.cpp import CppUnit, CursorKind, Node

from .operands import NAMESPACE
from .site import Site

_GUARDS = frozenset({"CUDAGuard", "OptionalCUDAGuard"})

# `torch::Device(torch::kCUDA, i)`, `at::Device(at::DeviceType::CUDA)`, `c10::Device("cuda:1")`.
_CUDA_DEVICE_MADE = re.compile(
    rf"{NAMESPACE}Device\((?:{NAMESPACE}(?:kCUDA|DeviceType::CUDA)(?:,[\w:]+)?|\"cuda(?::\d+)?\")\)"
)


def _device_spellings(unit: CppUnit, site: Site, function: Node) -> set[str]:
    """The device's text, and the tensor it came from (`d = x.device()` -> `x`)."""
    spellings = {site.device.replace(" ", "")}
    match = re.fullmatch(r"(.+)\.device\(\)", site.device.replace(" ", ""))
    if match:
        spellings.add(match.group(1))
    for node in function.walk():
        if node.kind is CursorKind.VAR_DECL and node.spelling == site.device and node.expressions():
            initialiser = unit.node_text(node.expressions()[-1]).replace(" ", "")
            inner = re.fullmatch(r"(.+)\.device\(\)", initialiser)
            if inner:
                spellings.add(inner.group(1))
    return spellings


def cuda_evidence(unit: CppUnit, site: Site, function: Node) -> str:
    """Why `site.device` is a CUDA device before the copy; "" when nothing shows it."""
    if site.device_is_type:
        return f"`{site.device}` is the CUDA device type"
    if _CUDA_DEVICE_MADE.fullmatch(site.device.replace(" ", "")):
        return f"`{site.device}` is made a CUDA device"
    spellings = _device_spellings(unit, site, function)
    before = unit.tokens_in(function.start, site.start)
    compact = "".join(t.spelling for t in before)
    for spelling in spellings:
        for form in (f"{spelling}.is_cuda()", f"{spelling}.device().is_cuda()"):
            at = compact.find(form)
            if at >= 0 and "TORCH_CHECK(" in compact[max(0, at - 400) : at]:
                return f"`TORCH_CHECK({form})` precedes the copy"
    guard = guard_on(unit, site.device, function, site.start)
    if guard is not None:
        text = " ".join(unit.node_text(guard).split())
        return f"`{text}` (L{unit.line_of(guard.start)}) rejects any device but CUDA"
    return ""


def guard_on(unit: CppUnit, device: str, function: Node, before: int) -> Node | None:
    """A `CUDAGuard g(device)` / `OptionalCUDAGuard g(device)` declared before `before`, in a block around it."""
    wanted = device.replace(" ", "")
    for node in function.walk():
        if node.kind is not CursorKind.VAR_DECL or node.end > before:
            continue
        tokens = unit.tokens_in(node.start, node.end)
        if not any(t.spelling in _GUARDS for t in tokens):
            continue
        spelled = "".join(t.spelling for t in tokens).split(node.spelling, 1)[-1]
        block = node.parent.parent if node.parent is not None else None
        if spelled in (f"({wanted})", f"{{{wanted}}}") and _encloses(block, before):
            return node
    return None


def _encloses(block: Node | None, offset: int) -> bool:
    return block is not None and block.start <= offset < block.end
