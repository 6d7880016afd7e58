"""The poison: values per dtype, restoring state, TorchScript, and reaching every Python subprocess."""

import ast
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from optpatch import poison


def test_nan_pass_fills_new_memory_with_nan_and_true():
    with poison.poisoned("nan"):
        assert torch.isnan(torch.empty(4)).all()
        assert torch.empty(3, dtype=torch.bool).all()
        assert (torch.empty(2, dtype=torch.int64) == torch.iinfo(torch.int64).max).all()


def test_pattern_pass_uses_other_values_than_the_nan_pass():
    with poison.poisoned("pattern"):
        base = torch.ones(2, 3)
        assert (torch.empty(4) == poison.PATTERN_FLOAT).all()
        assert (torch.empty_like(base) == poison.PATTERN_FLOAT).all()
        assert (base.new_empty(5, dtype=torch.int32) == poison.PATTERN_INT).all()
        assert (torch.empty_strided((2, 2), (1, 2), dtype=torch.int16) == poison.PATTERN_INT).all()
        assert (torch.empty(3, dtype=torch.uint8) == poison.PATTERN_UINT8).all()
        assert not torch.empty(3, dtype=torch.bool).any()
        grown = torch.ones(2)
        grown.resize_(4)
        assert torch.isnan(grown[2:]).all()  # memory the wrappers do not hand out still gets the NaN fill


def test_poisoned_restores_allocators_and_deterministic_flags():
    original_empty, original_new_empty = torch.empty, torch.Tensor.new_empty
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    for mode in poison.MODES:
        with poison.poisoned(mode):
            pass
        assert torch.empty is original_empty and torch.Tensor.new_empty is original_new_empty
        assert torch.are_deterministic_algorithms_enabled() == was_deterministic


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torchscript_still_compiles_torch_empty_under_the_pattern_pass():
    with poison.poisoned("pattern"):

        @torch.jit.script
        def allocate(n: int) -> torch.Tensor:
            return torch.empty(n)

        assert allocate(3).shape == (3,)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown poison mode"):
        poison.sitecustomize_source("zeros")


def test_sitecustomize_imports_nothing_from_optpatch():
    # The command may run under an interpreter where optpatch is not installed.
    tree = ast.parse(poison.sitecustomize_source("nan"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not any(name.startswith("optpatch") for name in imported), imported


@pytest.fixture
def site(tmp_path):
    def make(mode):
        directory = tmp_path / f"site-{mode}"
        directory.mkdir()
        (directory / "sitecustomize.py").write_text(poison.sitecustomize_source(mode))
        return directory

    return make


def run_python(code: str, pythonpath: list, **env) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment, capture_output=True, text=True, timeout=120)


def test_poison_reaches_a_grandchild_python_process(site, tmp_path):
    log = tmp_path / "poisoned.txt"
    child = "import torch; print(torch.empty(2, dtype=torch.int64).tolist(), torch.empty(1).item())"
    result = run_python(
        f"""
        import subprocess, sys
        print(subprocess.run([sys.executable, "-c", {child!r}], capture_output=True, text=True).stdout.strip())
        """,
        [site("pattern")],
        OPTPATCH_POISON_LOG=str(log),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"[{poison.PATTERN_INT}, {poison.PATTERN_INT}] {poison.PATTERN_FLOAT}"
    assert log.read_text().strip().endswith(" pattern")  # the grandchild reported itself


def test_a_process_that_never_imports_torch_does_not_load_it(site):
    result = run_python("import sys, json; print('torch' in sys.modules)", [site("nan")])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_users_own_sitecustomize_still_runs(site, tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITE_RAN = True\n")
    result = run_python(
        "import builtins, torch; print(getattr(builtins, 'USER_SITE_RAN', False), torch.isnan(torch.empty(1)).item())",
        [site("nan"), own],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]
