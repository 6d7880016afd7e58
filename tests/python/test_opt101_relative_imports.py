"""OPT101 in a package module: relative imports (`from . import x`) sit beside the torch imports."""

from pathlib import Path

from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules
from optpatch.source import read_source

PACKAGE_MODULE = """from . import sibling
from .torch import zeros as local_zeros
import torch


def f(y):
    x = torch.zeros(3)
    x.copy_(y)
    return x, local_zeros(3)
"""


def test_a_module_with_relative_imports_is_analysed_and_fixed(tmp_path):
    # Found by the mutant campaign on DeepSpeed: `from . import p2p` made OPT101 build cst.Name("") and fail the file.
    path = tmp_path / "module.py"
    path.write_text(PACKAGE_MODULE)
    result = analyse_file(read_source(path, "module.py"), load_rules(), Settings(), FixPolicy())
    assert result.error is None, result.error
    assert result.new.decode() == PACKAGE_MODULE.replace("torch.zeros(3)", "torch.empty(3)")
