"""Generated `F(args).move(...)` sites: OPT102's promises hold on each, at every tier.

Never a second `device=`, never `device=` on a non-factory, never a rewrite of
`.to(dtype)`, `.to(other_tensor)` or `.to(memory_format=...)`, nor of a chain
with a method that computes new values between the factory and the move, a
chain of views and conversions kept whole, and the rewritten site computes a
tensor of the same dtype, device and shape (and the same values unless the
factory is random), run on the CPU under CudaOnCpu.
"""

from pathlib import Path

import libcst as cst
import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotated import assert_same, load_module
from cuda_on_cpu import CudaOnCpu
from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy, fix_id
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

FACTORIES = {
    "torch.zeros(3, 2{extra})": "constant",
    "torch.ones(4{extra})": "constant",
    "torch.full((2,), 5{extra})": "constant",
    "torch.arange(6{extra})": "constant",
    "torch.linspace(0, 1, 5{extra})": "constant",
    "torch.randn(3{extra})": "random",
    "torch.tensor([1.0, 2.0]{extra})": "constant",
    "torch.from_numpy(array)": "constant",
    "torch.cat([x, x])": "not a factory",
    "np.zeros(3).view(np.float32)": "not torch",
}
# Methods between the factory and the move: views and conversions stay in the chain; the others keep the site.
OPS = {
    "": "none",
    ".view(-1)": "view",
    ".repeat(2, 1).t()": "view",
    ".unsqueeze(0).contiguous()": "view",
    ".int()": "conversion",
    ".float()": "conversion",
    ".half()": "conversion",
    ".to(torch.int32)": "conversion",
    ".cumsum(0)": "computes",
    ".view(torch.int32)": "computes",
}
EXTRAS = ["", ", dtype=torch.float64", ', device="cpu"', ", requires_grad=True", ", out=buffer", ", pin_memory=True"]
MOVES = {
    ".to(DEV)": "device",
    ".to(device=DEV)": "device",
    ".to(DEV, non_blocking=True)": "device",
    ".to(DEV, torch.float16)": "device",
    '.to("cuda:1")': "device",
    ".cuda()": "device",
    ".cuda(1)": "device",
    ".to(device)": "device",
    ".to(torch.float16)": "not a device",
    ".to(int)": "not a device",
    ".to(other)": "not a device",
    ".to(memory_format=torch.contiguous_format)": "not a device",
    ".to(thing)": "not a device",
}
PROGRAM = """\
import numpy as np
import torch

DEV = torch.device("cuda")


def site(x, other: torch.Tensor, array, buffer, device, thing):
    return {site}
"""
RULES = select_rules(load_rules(), ("OPT102",))


def rewrite_every_tier(code: str) -> str:
    source = SourceFile("site.py", Path("site.py"), code.encode(), code, "utf-8", False, "python")
    first = analyse_file(source, RULES, Settings(), FixPolicy())
    accepted = frozenset(fix_id(f) for f in first.findings if f.fix is not None)
    result = analyse_file(source, RULES, Settings(), FixPolicy(unsafe_fixes=True, validated=accepted))
    assert result.error is None, result.error
    return result.new.decode() if result.new is not None else code


def device_keywords(code: str) -> dict[str, int]:
    """How many `device=` each call (by its callee's text) carries, summed per callee."""
    counts: dict[str, int] = {}
    module = cst.parse_module(code)
    for node in _calls(module):
        callee = module.code_for_node(node.func)
        keywords = sum(1 for arg in node.args if arg.keyword is not None and arg.keyword.value == "device")
        assert keywords <= 1, f"a second device= in {module.code_for_node(node)}"
        counts[callee] = counts.get(callee, 0) + keywords
    return counts


def _calls(node: cst.CSTNode):
    if isinstance(node, cst.Call):
        yield node
    for child in node.children:
        yield from _calls(child)


def run_site(code: str):
    module = load_module(code, "generated_site")
    torch.manual_seed(0)
    arguments = (torch.ones(2), torch.ones(1, dtype=torch.int8), np.arange(3.0), torch.empty(0), "cpu", torch.float64)
    with CudaOnCpu():
        try:
            return module.site(*arguments)
        except Exception as error:  # both versions must fail alike
            return type(error).__name__


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(FACTORIES)), st.sampled_from(EXTRAS), st.sampled_from(sorted(OPS)), st.sampled_from(sorted(MOVES)))
def test_generated_sites_keep_their_meaning(factory, extra, op, move):
    site = factory.format(extra=extra) + op + move
    code = PROGRAM.format(site=site)
    rewritten = rewrite_every_tier(code)
    compile(rewritten, "site.py", "exec")
    before, after = device_keywords(code), device_keywords(rewritten)
    factory_kind = FACTORIES[factory]
    if factory_kind in ("not a factory", "not torch") or MOVES[move] == "not a device" or OPS[op] == "computes":
        assert rewritten == code, f"rewrote {site}"
    assert op in rewritten.replace(move, ""), f"the chain of {site} is lost: {rewritten}"
    for callee, count in after.items():
        if not callee.startswith("torch.") or callee.endswith(("cat", "device")):
            assert count == before.get(callee, 0), f"device= added to {callee} in {site}"
    original, result = run_site(code), run_site(rewritten)
    if isinstance(original, str) or isinstance(result, str):
        assert original == result, f"{site}: {original!r} became {result!r}"
        return
    assert_same(original, result, site, values=factory_kind != "random")
