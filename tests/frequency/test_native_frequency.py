"""How often C++ runs: Python calls an extension's binding, the binding runs a C++ function, which calls the launcher
holding the finding (cpp_calls.py, call_graph._Natives).

The project below is an extension as people write them: a build script names
the module and its sources, a frontend registers the bindings with pybind11
(one through a lambda), a `.cu` file holds the launchers, and a second file
registers an operator with `TORCH_LIBRARY`. Every C++ finding must come with
the frequency its Python callers give it, and the path through the binding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch import engine
from optpatch.config import Settings
from optpatch.cpp_calls import index_text
from optpatch.model import Frequency, FrequencySource
from optpatch.policy import FixPolicy

SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="mini",
    ext_modules=[CUDAExtension(name="mini._ops", sources=["csrc/frontend.cpp", "csrc/kernels.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
"""

FRONTEND = """\
#include <torch/extension.h>

torch::Tensor twice_cuda(torch::Tensor x);
torch::Tensor total_cuda(torch::Tensor x);

// A comment with a brace { and a call_me(x) in it changes nothing.
torch::Tensor twice(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be on the GPU {");
  return twice_cuda(x);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("twice", &twice, "Twice x (fused)");
  m.def("total", [](torch::Tensor x) { return total_cuda(x); });
}
"""

KERNELS = """\
#include <torch/extension.h>

__global__ void scale_kernel(float* out, const float* in, int64_t n) {
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i];
}

__global__ void sum_kernel(const float* in, float* out, int64_t n) {
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&out[0], in[i]);
}

torch::Tensor twice_cuda(torch::Tensor x) {
  auto out = torch::zeros_like(x);
  scale_kernel<<<1, 128>>>(out.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  return out;
}

torch::Tensor total_cuda(torch::Tensor x) {
  auto out = torch::zeros({1}, x.options());
  sum_kernel<<<1, 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
  return out;
}

torch::Tensor unused_cuda(torch::Tensor x) {
  auto out = torch::zeros({1}, x.options());
  sum_kernel<<<1, 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
  return out;
}
"""

OPERATOR = """\
#include <torch/extension.h>
#include <torch/library.h>

__global__ void fill_kernel(float* out, int64_t n) {
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}

torch::Tensor ones_cuda(torch::Tensor x) {
  auto out = torch::zeros_like(x);
  fill_kernel<<<1, 128>>>(out.data_ptr<float>(), out.numel());
  return out;
}

TORCH_LIBRARY(mini, m) { m.def("ones(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(mini, CUDA, m) { m.impl("ones", &ones_cuda); }
"""

MODEL = """\
import torch

from mini import _ops


class Doubler(torch.nn.Module):
    def forward(self, x):
        return _ops.twice(x) + torch.ops.mini.ones(x)


def build_total(x):
    return _ops.total(x)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "mini_project"
    files = {"setup.py": SETUP, "csrc/frontend.cpp": FRONTEND, "csrc/kernels.cu": KERNELS,
             "csrc/operator.cu": OPERATOR, "mini/__init__.py": "", "mini/model.py": MODEL}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _by_function(result, rel: str) -> dict[int, object]:
    return {f.line: f.frequency for f in result.findings if f.path == rel}


def test_a_launcher_runs_as_often_as_the_python_that_calls_its_binding(project: Path):
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    kernels = _by_function(result, "csrc/kernels.cu")
    assert set(kernels) == {14, 20, 26}, kernels
    twice = kernels[14]
    assert (twice.frequency, twice.source) == (Frequency.PER_STEP, FrequencySource.FORWARD)
    assert [(step.path, step.function) for step in twice.path] == [
        ("mini/model.py", "Doubler.forward"), ("csrc/frontend.cpp", "_ops.twice"), ("csrc/frontend.cpp", "twice"),
        ("csrc/kernels.cu", "twice_cuda")]
    total = kernels[20]  # bound through a lambda, called from a set-up function
    assert (total.frequency, total.source) == (Frequency.ONE_TIME, FrequencySource.SETUP)
    assert [step.function for step in total.path] == ["build_total", "_ops.total", "total_cuda"]
    unused = kernels[26]  # bound by nothing
    assert (unused.frequency, unused.source) == (Frequency.UNREACHED, FrequencySource.NOT_BOUND)


def test_an_operator_registered_with_torch_library_is_reached_through_torch_ops(project: Path):
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    (ones,) = _by_function(result, "csrc/operator.cu").values()
    assert ones.frequency is Frequency.PER_STEP
    assert [step.function for step in ones.path] == ["Doubler.forward", "torch.ops.mini.ones", "ones_cuda"]


def test_a_run_narrowed_to_the_launcher_reads_the_bindings_it_did_not_analyse(project: Path, tmp_path, monkeypatch):
    """Pre-commit analyses only the changed `.cu` file; the frontend and the model are indexed all the same."""
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    whole = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    narrowed = engine.run(project, Settings(), FixPolicy(), paths=[project / "csrc/kernels.cu"])
    assert _by_function(narrowed, "csrc/kernels.cu") == _by_function(whole, "csrc/kernels.cu")
    again = engine.run(project, Settings(), FixPolicy(), paths=[project / "csrc/kernels.cu"])  # from the cache
    assert _by_function(again, "csrc/kernels.cu") == _by_function(whole, "csrc/kernels.cu")


def test_a_python_name_bound_in_two_extensions_is_resolved_by_its_module_only(project: Path):
    """`twice` bound by a second module too: `_ops.twice` still resolves by its import, and the name alone (an
    extension loaded at run time) resolves to neither."""
    (project / "csrc/other.cpp").write_text(
        '#include <torch/extension.h>\ntorch::Tensor other(torch::Tensor x) { return x; }\n'
        'PYBIND11_MODULE(other_ext, m) { m.def("twice", &other); }\n')
    (project / "mini/loaded.py").write_text(
        "import torch\n\n\nclass Loaded(torch.nn.Module):\n    def forward(self, x):\n"
        "        ext = load_somehow()\n        return ext.twice(x)\n")
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    twice = _by_function(result, "csrc/kernels.cu")[14]
    assert [step.function for step in twice.path][:2] == ["Doubler.forward", "_ops.twice"]


def test_a_module_the_build_script_names_without_readable_sources_holds_the_unplaced_bindings(project: Path):
    """TransformerEngine's `CppExtension(name="transformer_engine_torch", sources=[str(s) for s in sources])`."""
    setup = SETUP.replace('name="mini._ops", sources=["csrc/frontend.cpp", "csrc/kernels.cu"]',
                          'name="mini_native", sources=[str(path) for path in SOURCES]')
    assert setup != SETUP
    (project / "setup.py").write_text(setup)
    (project / "mini/model.py").write_text(MODEL.replace("from mini import _ops", "import mini_native as _ops"))
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    twice = _by_function(result, "csrc/kernels.cu")[14]
    assert twice.frequency is Frequency.PER_STEP
    assert [step.function for step in twice.path] == ["Doubler.forward", "mini_native.twice", "twice", "twice_cuda"]


LOADED_BINDINGS = """\
#include <torch/extension.h>

torch::Tensor unused_cuda(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused_unused", &unused_cuda); }
"""


@pytest.mark.parametrize("init, call, runs", [
    # DeepSpeed's op builders: the module is loaded at run time, and kept in an attribute ...
    ("self.ext = OpBuilder().load()", "self.ext.fused_unused(x)", Frequency.PER_STEP),
    # ... or its function is (`self.multi_tensor_adam = fused_adam_cuda.multi_tensor_adam`)
    ("ext = OpBuilder().load()\n        self.fused = ext.fused_unused", "self.fused(x)", Frequency.PER_STEP),
    # An object that is no loaded extension calls nothing of the project's C++, whatever its method's name.
    ("self.ext = make_backend()", "self.ext.fused_unused(x)", Frequency.UNREACHED),
])
def test_an_extension_loaded_at_run_time_is_followed_only_from_where_it_was_loaded(project: Path, init, call, runs):
    (project / "csrc/loaded.cpp").write_text(LOADED_BINDINGS)
    (project / "mini/fused.py").write_text(
        "import torch\n\n\nclass Fused(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        {init}\n\n    def forward(self, x):\n        return {call}\n")
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    unused = _by_function(result, "csrc/kernels.cu")[26]
    assert unused.frequency is runs, unused.describe("csrc/kernels.cu")
    if runs is Frequency.PER_STEP:
        assert [step.function for step in unused.path] == ["Fused.forward", "<module>.fused_unused", "unused_cuda"]
    else:  # bound, but called by nothing in the project
        assert unused.source is FrequencySource.PUBLIC_API


# -- the reading of one file ---------------------------------------------------------------------


def test_functions_are_read_past_templates_attributes_initialisers_and_scopes():
    text = """\
namespace outer { namespace {
template <class T, int N>
__global__ void __launch_bounds__(256) kernel(T* out) { helper<T>(out); }
}  // namespace

struct Runner : public Base<int> {
  Runner(int n) : n_(n), data_(make(n)) { setup(n); }
  void run() const { launch<<<1, 1>>>(); if (n_) { nested(); } }
  int n_;
};

extern "C" {
int plain(int x) { return twice(x) + sizeof(int); }
}
auto table = std::vector<int>{1, 2, 3};
}  // namespace outer
"""
    found = index_text(text)
    assert [(f.name, f.line, f.end_line) for f in found.functions] == [
        ("kernel", 3, 3), ("Runner", 7, 7), ("run", 8, 8), ("plain", 13, 13)]
    calls = {f.name: [name for name, _ in f.calls] for f in found.functions}
    assert calls == {"kernel": ["helper"], "Runner": ["setup"], "run": ["launch", "nested"], "plain": ["twice"]}
    assert found.bindings == ()


def test_bindings_name_what_they_run():
    text = """\
void init_ops(py::module& m) {
  m.def("scale", py::overload_cast<at::Tensor, double>(&ops::scale), "scale (in place)");
}
TORCH_LIBRARY_FRAGMENT(myops, m) {
  m.def("rms_norm(Tensor! out, Tensor input) -> ()");
  m.impl("rms_norm", torch::kCUDA, &rms_norm);
}
PYBIND11_MODULE(fast_ext, m) { m.def("run", run_all); init_ops(m); }
"""
    found = index_text(text)
    assert [(b.registrar, b.module, b.name, b.line) for b in found.bindings] == [
        ("", "", "scale", 2), ("TORCH_LIBRARY_FRAGMENT", "myops", "rms_norm", 5),
        ("TORCH_LIBRARY_FRAGMENT", "myops", "rms_norm", 6), ("PYBIND11_MODULE", "fast_ext", "run", 8)]
    scale, schema, impl, run = found.bindings
    assert "scale" in scale.targets and schema.targets == () and "rms_norm" in impl.targets
    assert run.targets == ("run_all",)


# -- operators registered from Python, and names bound to them -----------------------------------

CUSTOM_OP = """\
import torch


@torch.library.custom_op("mini::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    out.copy_(x * 2)
    return out


{binding}


class Scaler(torch.nn.Module):
    def forward(self, x):
        return {call}
"""


@pytest.mark.parametrize("binding, call", [
    ("", "torch.ops.mini.scale(x)"),  # the operator, called by its torch.ops name
    ("_scale = torch.ops.mini.scale", "_scale(x)"),  # flash-attention's `_wrapped_flash_attn_backward`
    ("_scale = scale", "_scale(x)"),  # Megatron-LM's `l2_norm_impl = local_multi_tensor_l2_norm`, handed on
])
def test_a_python_custom_op_runs_as_often_as_its_torch_ops_callers(tmp_path: Path, binding, call):
    (tmp_path / "ops.py").write_text(CUSTOM_OP.format(binding=binding, call=call))
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    (zeros,) = [f for f in result.findings if f.path == "ops.py" and f.line == 6]
    assert zeros.frequency.frequency is Frequency.PER_STEP, zeros.frequency.describe("ops.py")
    assert [step.function for step in zeros.frequency.path] == ["Scaler.forward", "scale"]


def test_an_unclosed_registration_names_only_what_its_own_line_does():
    """A missing `)` (a macro the blanking hid, a typo) ends a registration at its line, not at the file's end."""
    text = 'PYBIND11_MODULE(ext, m) {\n  m.def("a", &run_a\n  m.def("b", &run_b);\n}\n'
    a, b = index_text(text).bindings
    assert (a.name, a.targets) == ("a", ("run_a",)) and (b.name, b.targets) == ("b", ("run_b",))


# -- a device registry, and the same op defined for two frameworks (mmcv) ----------------------------------

MMCV_LIKE = {
    "csrc/pytorch/pybind.cpp": """\
#include "helper.hpp"
Tensor nms(Tensor boxes);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("nms", &nms, "nms (boxes)"); }
""",
    "csrc/pytorch/nms.cpp": """\
#include "helper.hpp"
Tensor nms_impl(Tensor boxes) { return DISPATCH_DEVICE_IMPL(nms_impl, boxes); }
Tensor nms(Tensor boxes) { return nms_impl(boxes); }
""",
    "csrc/parrots/nms.cpp": """\
#include "helper.hpp"
Tensor nms_impl(Tensor boxes) { return boxes; }
Tensor nms(Tensor boxes) { return nms_impl(boxes); }
""",
    "csrc/pytorch/cuda/cudabind.cpp": """\
#include "helper.hpp"
Tensor NMSCUDAKernelLauncher(Tensor boxes);
Tensor nms_cuda(Tensor boxes) { return NMSCUDAKernelLauncher(boxes); }
Tensor nms_impl(Tensor boxes);
REGISTER_DEVICE_IMPL(nms_impl, CUDA,
                     nms_cuda);
""",
    "csrc/pytorch/cuda/nms_cuda.cu": """\
#include <torch/extension.h>

__global__ void keep_kernel(float* out, int64_t n) {
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}

torch::Tensor NMSCUDAKernelLauncher(torch::Tensor boxes) {
  auto out = torch::zeros_like(boxes);
  keep_kernel<<<1, 128>>>(out.data_ptr<float>(), out.numel());
  return out;
}
""",
    "ops/nms.py": """\
import torch

from .utils import ext_loader

ext_module = ext_loader.load_ext("_ext", ["nms"])


class NMSop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, boxes):
        return ext_module.nms(boxes)
""",
}


def test_a_device_registry_and_the_nearest_of_two_definitions_lead_to_the_launcher(tmp_path: Path):
    """mmcv: the binding's wrapper calls `nms_impl`, which dispatches to what `REGISTER_DEVICE_IMPL` names in
    another file; `nms` and `nms_impl` are defined again for another framework, in a folder beside."""
    for rel, text in MMCV_LIKE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    (launcher,) = _by_function(result, "csrc/pytorch/cuda/nms_cuda.cu").values()
    assert launcher.frequency is Frequency.PER_STEP, launcher.describe("csrc/pytorch/cuda/nms_cuda.cu")
    assert [(step.path, step.function) for step in launcher.path] == [
        ("ops/nms.py", "NMSop.forward"), ("csrc/pytorch/pybind.cpp", "<module>.nms"), ("csrc/pytorch/nms.cpp", "nms"),
        ("csrc/pytorch/nms.cpp", "nms_impl"), ("csrc/pytorch/cuda/cudabind.cpp", "nms_cuda"),
        ("csrc/pytorch/cuda/nms_cuda.cu", "NMSCUDAKernelLauncher")]


def test_an_extension_a_base_class_loaded_is_followed_from_its_subclasses(project: Path):
    """DeepSpeed's op bindings: `BaseOp.inference_module = builder.load()` in one file, `self.inference_module.f`
    (or a method stored from it) in subclasses elsewhere."""
    (project / "csrc/loaded.cpp").write_text(LOADED_BINDINGS)
    (project / "mini/base_op.py").write_text(
        "class BaseOp:\n    ext = None\n\n    def __init__(self):\n        if BaseOp.ext is None:\n"
        "            BaseOp.ext = OpBuilder().load()\n")
    (project / "mini/ops.py").write_text(
        "import torch\n\nfrom mini.base_op import BaseOp\n\n\nclass Unused(BaseOp, torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.run = self.ext.fused_unused\n\n"
        "    def forward(self, x):\n        return self.run(x)\n")
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    unused = _by_function(result, "csrc/kernels.cu")[26]
    assert unused.frequency is Frequency.PER_STEP, unused.describe("csrc/kernels.cu")
    assert [step.function for step in unused.path] == ["Unused.forward", "<module>.fused_unused", "unused_cuda"]


def test_an_autograd_formula_registered_for_a_custom_op_runs_every_backward(tmp_path: Path):
    """apex's group norm: `group_norm_nhwc_fprop.register_autograd(backward, setup_context=...)` at module level."""
    (tmp_path / "ops.py").write_text(
        "import torch\n\n\n@torch.library.custom_op(\"mini::scale\", mutates_args=())\n"
        "def scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n\n\n"
        "def backward(ctx, grad):\n    out = torch.zeros_like(grad)\n    out.copy_(grad * 2)\n    return out\n\n\n"
        "scale.register_autograd(backward)\n")
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    (zeros,) = [f for f in result.findings if f.path == "ops.py" and f.line == 10]
    assert zeros.frequency.frequency is Frequency.PER_STEP, zeros.frequency.describe("ops.py")
    assert zeros.frequency.source is FrequencySource.HOOK


def test_a_braced_list_in_a_constructors_initialisers_is_no_block():
    """gsplat: `: PyBaseCameraModel(1, torch::zeros({0}))` before the body; the finding in it is the constructor's."""
    text = ("Model::Model(Params params)\n    : Base(1,\n           torch::zeros({0}),\n           make({1, 2})),\n"
            "      params_(params) {\n  setup();\n}\n\nint after(int x) { return twice(x); }\n")
    found = index_text(text)
    assert [(f.name, f.line, f.end_line) for f in found.functions] == [("Model", 1, 7), ("after", 9, 9)]
    assert [name for name, _ in found.functions[0].calls] == ["setup"]


def test_a_googletest_body_is_a_test(tmp_path: Path):
    """gsplat's tests/cpp: a finding in `TEST(Suite, Name) { ... }` runs once, in a test (not "module level")."""
    (tmp_path / "test_ops.cpp").write_text(
        "#include <torch/torch.h>\n#include <gtest/gtest.h>\n\nTEST(Ops, Zeros) {\n"
        "  auto out = torch::zeros({2, 3});\n  fill(out);\n  EXPECT_TRUE(out.defined());\n}\n")
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    (zeros,) = [f.frequency for f in result.findings if f.path == "test_ops.cpp"]
    assert (zeros.frequency, zeros.source) == (Frequency.ONE_TIME, FrequencySource.TEST), zeros.describe("test_ops.cpp")


# -- operators reached by name, and operators registered across files -----------------------------------

LAZY_OPS = """\
import torch


def _make_lazy_op(name):
    def call(*args):
        from mini import _ops  # noqa: F401 (loads the library that registers torch.ops.mini)

        return getattr(torch.ops.mini, {key})(*args)

    return call


def _by_name(name, *args):
    return getattr(torch.ops.mini, {key})(*args)


class Doubler(torch.nn.Module):
    def forward(self, x):
        return {call}
"""


@pytest.mark.parametrize("key, call, reached", [
    ("name", '_make_lazy_op("ones")(x)', True),  # gsplat's `_make_lazy_cuda_func("adam")(...)`: a factory's closure
    ("name", '_by_name("ones", x)', True),  # the function's own first parameter
    ('"ones"', "_by_name(None, x)", True),  # a literal name
    ("name", '_make_lazy_op(x)(x)', False),  # a name not written in the call: nothing to follow
    ("name.lower()", '_make_lazy_op("ones")(x)', False),  # a name the closure computes
])
def test_an_operator_named_by_a_string_is_reached_through_the_function_that_looks_it_up(
        project: Path, key, call, reached):
    (project / "mini/model.py").write_text(LAZY_OPS.format(key=key, call=call))
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    (ones,) = _by_function(result, "csrc/operator.cu").values()
    if reached:
        assert ones.frequency is Frequency.PER_STEP, ones.describe("csrc/operator.cu")
        assert [step.function for step in ones.path][-2:] == ["torch.ops.mini.ones", "ones_cuda"]
        assert ones.path[0].function == "Doubler.forward"
    else:
        assert ones.frequency is Frequency.UNREACHED, ones.describe("csrc/operator.cu")


SCHEMAS = """\
#include <torch/library.h>

TORCH_LIBRARY(mini, m) { m.def("ones(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(mini, CUDA, m) { mini::register_cuda(m); }
"""

HELPER_IMPLEMENTATION = OPERATOR[: OPERATOR.index("TORCH_LIBRARY(mini, m)")] + """\
namespace mini {
void register_cuda(torch::Library& m) { m.impl("ones", &ones_cuda); }
}
"""

SEPARATE_IMPLEMENTATION = OPERATOR.replace('TORCH_LIBRARY(mini, m) { m.def("ones(Tensor x) -> Tensor"); }\n', "")


@pytest.mark.parametrize("implementation", [
    HELPER_IMPLEMENTATION,  # gsplat: each file's helper handed the library by `TORCH_LIBRARY_IMPL` in another
    SEPARATE_IMPLEMENTATION,  # torchvision: the schema in one file, each device's `TORCH_LIBRARY_IMPL` in its own
])
def test_an_operator_declared_in_one_file_and_implemented_in_another_reaches_the_implementation(
        project: Path, implementation):
    assert SEPARATE_IMPLEMENTATION != OPERATOR
    # Read before the implementation: its binding of the operator comes first.
    declarations = SCHEMAS if implementation is HELPER_IMPLEMENTATION else SCHEMAS.replace("mini::register_cuda(m);", "")
    (project / "csrc/declarations.cpp").write_text(declarations)
    (project / "csrc/operator.cu").write_text(implementation)
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    (ones,) = _by_function(result, "csrc/operator.cu").values()
    assert ones.frequency is Frequency.PER_STEP, ones.describe("csrc/operator.cu")
    assert [step.function for step in ones.path] == ["Doubler.forward", "torch.ops.mini.ones", "ones_cuda"]


def test_a_python_declared_operator_runs_its_fake_kernel_and_its_cpp_implementation(project: Path):
    """torchao declares its operators in Python and registers a fake kernel there (`register_custom_op`), while a
    `.cu` file implements them: `torch.ops.ns.name` reaches both."""
    (project / "mini/fake.py").write_text(
        "import torch\n\n\n@torch.library.custom_op(\"mini::ones\", mutates_args=())\n"
        "def ones(x: torch.Tensor) -> torch.Tensor:\n    return torch.empty_like(x)\n")
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    (ones,) = _by_function(result, "csrc/operator.cu").values()
    assert ones.frequency is Frequency.PER_STEP, ones.describe("csrc/operator.cu")


def test_registrations_name_operators_as_torch_and_its_stable_abi_spell_them():
    text = """\
TORCH_LIBRARY_IMPL(torchvision, CUDA, m) {
  m.impl(TORCH_SELECTIVE_NAME("torchvision::nms"), TORCH_FN(nms_kernel));
  m.impl("torchvision::roi_align", TORCH_FN(vision::ops::roi_align_kernel));
}
STABLE_TORCH_LIBRARY_IMPL(torchao, CUDA, m) {
  m.impl("torchao::to_sparse", TORCH_BOX(&to_sparse_cuda));
}
"""
    found = index_text(text)
    assert [(b.registrar, b.module, b.name, b.line, b.targets) for b in found.bindings] == [
        ("TORCH_LIBRARY_IMPL", "torchvision", "nms", 2, ("nms_kernel",)),
        ("TORCH_LIBRARY_IMPL", "torchvision", "roi_align", 3, ("roi_align_kernel",)),
        ("STABLE_TORCH_LIBRARY_IMPL", "torchao", "to_sparse", 6, ("to_sparse_cuda",))]
    assert all(b.torch_ops for b in found.bindings)
