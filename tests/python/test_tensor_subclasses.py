"""Tensor subclasses with a dispatch hook, in the scanned file or a module it imports (analysis/tensor_subclasses.py).

A file whose `new_zeros` or `*_like` receiver may be a subclass with a
dispatch hook, defined in a module it imports, gets a validate-tier fix;
the imported file becomes an input of the analysis, so editing it
re-analyses the importer; and the rewrite that the validate tier withholds
really breaks the program when the receiver is such a subclass.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import torch

from annotated import assert_same_behaviour
from optpatch import engine
from optpatch.config import Settings
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules, select_rules
from optpatch.passes import analyse_text
from optpatch.source import read_source

SUBCLASS = '''
import torch
from torch.utils._pytree import tree_map


class ZerosOnly(torch.Tensor):
    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func not in (torch.ops.aten.new_zeros.default, torch.ops.aten.copy_.default):
            raise NotImplementedError(f"{func} is not supported")
        unwrapped = tree_map(lambda a: a.elem if isinstance(a, ZerosOnly) else a, args)
        result = func(*unwrapped, **(kwargs or {}))
        return ZerosOnly(result) if isinstance(result, torch.Tensor) else result
'''

USER = '''
{imports}


def grow(t, src):
    x = t.new_zeros(src.shape)
    x.copy_(src)
    return x


def fresh(src):
    y = torch.zeros(src.shape)
    y.copy_(src)
    return y
'''


def _project(root: Path, imports: str, package: str = "pkg") -> Path:
    package_dir = root / package
    package_dir.mkdir(parents=True, exist_ok=True)
    (package_dir / "__init__.py").write_text("")
    (package_dir / "tensors.py").write_text(SUBCLASS)
    (package_dir / "plain.py").write_text("import torch\n\nSCALE = 2\n")
    user = package_dir / "ops.py"
    user.write_text(USER.format(imports=textwrap.dedent(imports).strip()))
    return user


def _line(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def _tiers(root: Path, user: Path) -> dict[str, str]:
    """The tier of the `new_zeros` fix in `grow` and of the `torch.zeros` fix in `fresh`."""
    source = read_source(user, user.relative_to(root).as_posix())
    analysis = analyse_text(source, select_rules(load_rules(), ["OPT101"]))
    assert analysis.error is None, analysis.error
    tiers = {finding.line: finding.fix.tier.value for finding in analysis.findings if finding.fix is not None}
    return {"grow": tiers[_line(user, "t.new_zeros")], "fresh": tiers[_line(user, "torch.zeros(")]}


@pytest.mark.parametrize(
    "imports",
    [
        "import torch\nfrom .tensors import ZerosOnly",
        "import torch\nfrom . import tensors",
        "import torch\nfrom pkg.tensors import ZerosOnly",
        "import torch\nimport pkg.tensors",
        "import torch\n\ndef load():\n    from pkg import tensors\n    return tensors",
    ],
    ids=["relative", "relative-module", "absolute", "import", "in-a-function"],
)
def test_a_receiver_in_a_module_that_imports_a_dispatch_subclass_is_validate_tier(tmp_path, imports):
    user = _project(tmp_path, imports)
    tiers = _tiers(tmp_path, user)
    assert tiers["grow"] == "validate"  # `t.new_zeros`: `t` may be a ZerosOnly
    assert tiers["fresh"] == "safe"  # `torch.zeros(shape)`: no tensor argument, no subclass sees it


def test_a_src_layout_resolves_absolute_imports_from_src(tmp_path):
    user = _project(tmp_path / "src", "import torch\nfrom pkg.tensors import ZerosOnly")
    assert _tiers(tmp_path, user)["grow"] == "validate"


def test_importing_only_plain_modules_keeps_the_fix_safe(tmp_path):
    user = _project(tmp_path, "import torch\nfrom .plain import SCALE\nimport numpy")
    assert _tiers(tmp_path, user)["grow"] == "safe"


def test_the_imported_module_is_an_input_and_editing_it_reanalyses_the_importer(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    user = _project(root, "import torch\nfrom .tensors import ZerosOnly")
    policy = FixPolicy()

    def tier_of_grow():
        result = engine.run(root, Settings(), policy, jobs=1, use_cache=True)
        line = _line(user, "t.new_zeros")
        return next(f.fix.tier.value for f in result.findings if f.path == "pkg/ops.py" and f.line == line)

    assert tier_of_grow() == "validate"
    tensors = root / "pkg" / "tensors.py"
    source = read_source(user, "pkg/ops.py")
    analysis = analyse_text(source, select_rules(load_rules(), ["OPT101"]))
    assert str(tensors) in {item.path for item in analysis.inputs}
    tensors.write_text("import torch\n\nclass Plain:\n    pass\n")
    assert tier_of_grow() == "safe"
    tensors.write_text(SUBCLASS)
    assert tier_of_grow() == "validate"


def test_the_withheld_rewrite_breaks_a_subclass_receiver(tmp_path, monkeypatch):
    """What the validate tier guards against: `new_empty` on the imported subclass raises where `new_zeros` did not."""
    user = _project(tmp_path, "import torch\nfrom .tensors import ZerosOnly")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name == "pkg" or name.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    original = user.read_text() + (
        "\n\ndef case_subclass():\n    src = torch.ones(2)\n    try:\n        return grow(ZerosOnly(src), src).elem\n"
        "    except NotImplementedError as error:\n        return str(error)\n"
    )
    original = original.replace("from .tensors import", "from pkg.tensors import")
    rewritten = original.replace("t.new_zeros(src.shape)", "t.new_empty(src.shape)")
    with pytest.raises(AssertionError):
        assert_same_behaviour(original, rewritten, "subclass_module")
    assert torch.equal(_run_case(original), torch.ones(2))


def _run_case(code: str):
    namespace: dict = {}
    exec(compile(code, "<subclass_module>", "exec"), namespace)
    return namespace["case_subclass"]()


def test_opt102_likewise_proposes_a_like_factory_move_for_validation_beside_a_subclass(tmp_path):
    """OPT102's `*_like(x).to(d)`: the same question of the same module (a `__torch_function__` assigned, not defined)."""
    module = tmp_path / "move.py"
    module.write_text(
        "import torch\n\n\nclass Plain(torch.Tensor):\n    __torch_function__ = torch._C._disabled_torch_function_impl\n\n\n"
        "def f(n):\n    base = torch.ones(n)\n    return torch.zeros_like(base).to('cuda')\n"
    )
    analysis = analyse_text(read_source(module, "move.py"), select_rules(load_rules(), ["OPT102"]))
    (finding,) = analysis.findings
    assert (finding.verdict.value, finding.fix.tier.value) == ("fix", "validate")
    module.write_text(module.read_text().replace("__torch_function__ = ", "other = "))
    (finding,) = analyse_text(read_source(module, "move.py"), select_rules(load_rules(), ["OPT102"])).findings
    assert finding.fix.tier.value == "safe"
