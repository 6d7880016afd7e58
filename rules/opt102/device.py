"""The move's target as the text of `device=`, and how sure the rule is that it names a device (the tier).

`.to(d)` gives `d`; `.cuda()` the current CUDA device, `.cuda(0)`
`"cuda:0"`, `.cuda(i)` an f-string. A target that is not a device
(`.to(None)`, a `.cuda(x)` that names nothing) keeps the site.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from optpatch.rule import KeepCategory, Kept, Tier
from optpatch.rule.python import PythonModule, string_literal
from optpatch.analysis.torch_values import Kind, Move, classify


@dataclass(frozen=True)
class DeviceSpelling:
    """The text of `device=` and how sure we are that it means what the move meant."""

    text: str
    tier: Tier
    reason: str
    device_type: str | None


def device_spelling(module: PythonModule, move: Move) -> DeviceSpelling | Kept:
    """`device=` text for the move, or why it cannot be written."""
    if move.method == "cuda":
        return _cuda_spelling(module, move)
    value = move.device_value
    assert value is not None and move.device is not None
    if value.kind is Kind.NONE:
        return Kept("`.to(None)` moves nothing", KeepCategory.NOT_A_DEVICE)
    text = _expression_text(module, move.device)
    if value.proven:
        return DeviceSpelling(text, Tier.SAFE, f"`{text}` is a device: {value.evidence}", value.device_type)
    return DeviceSpelling(text, Tier.VALIDATE, f"`{text}` may not be a device: {value.evidence}", value.device_type)


def _cuda_spelling(module: PythonModule, move: Move) -> DeviceSpelling | Kept:
    value = move.device_value
    if move.device is None or (value is not None and value.kind is Kind.NONE):
        return DeviceSpelling(string_literal(module, "cuda"), Tier.SAFE,
                              "`.cuda()` means the current CUDA device, as `device=\"cuda\"` does", "cuda")
    assert value is not None
    text = _expression_text(module, move.device)
    if isinstance(move.device, cst.Integer):
        return DeviceSpelling(string_literal(module, f"cuda:{move.device.evaluated_value}"), Tier.SAFE,
                              f"`.cuda({text})` is CUDA device {text}", "cuda")
    if value.kind is Kind.INTEGER:
        if any(c in text for c in "\"\\\n{}") or "'" in text:
            return Kept(f"cannot spell `.cuda({text})` as an f-string device", KeepCategory.CANNOT_SPELL)
        tier = Tier.SAFE if value.proven else Tier.VALIDATE
        return DeviceSpelling(string_literal(module, f"cuda:{{{text}}}", prefix="f"), tier,
                              f"`{text}` is a device index: {value.evidence}", "cuda")
    if value.kind is Kind.DEVICE and value.proven and value.device_type == "cuda":
        return DeviceSpelling(text, Tier.SAFE, f"`{text}` is a CUDA device: {value.evidence}", "cuda")
    if value.kind is Kind.DEVICE:
        return DeviceSpelling(
            text, Tier.VALIDATE,
            f"`.cuda({text})` raises unless `{text}` names a CUDA device, `device={text}` would not ({value.evidence})",
            "cuda",
        )
    return Kept(f"`.cuda({text})`: {value.evidence}", KeepCategory.NOT_A_DEVICE)


def _expression_text(module: PythonModule, node: cst.BaseExpression) -> str:
    text = module.text(node)
    return f"({text})" if isinstance(node, (cst.NamedExpr, cst.Lambda, cst.IfExp)) and not text.startswith("(") else text


def cpu_device(module: PythonModule, node: cst.BaseExpression) -> str | None:
    """Evidence that `device=node` provably names the CPU, else None."""
    value = classify(module, node)
    if value.kind is Kind.DEVICE and value.proven and value.device_type == "cpu":
        return value.evidence
    return None
