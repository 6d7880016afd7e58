"""OPT202 from-blob-async-copy: the rule's class; its steps are the modules beside it.

- screen.py: whether a file can hold a site at all (tokens only);
- site.py: what a site is, with operands.py (the buffer, sizes, element
  type and device) and placement.py (where the copy goes, who receives it);
- obligations.py: the tier and its proof, with cuda_device.py (the device is
  CUDA) and streams.py (everything stays on the copy's stream);
- edits.py: the rewrite.
"""

from __future__ import annotations

from typing import Iterator

from optpatch.rule import Context, Example, Finding, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier
from optpatch.rule.cpp import CppUnit, CursorKind, Node, Place, matching_bracket

from .edits import rewrite
from .obligations import obligations
from .screen import may_chain_a_copy
from .site import Site, chained_copy, is_torch_from_blob, outermost_function, site_of

IMPACT_BASIS = (
    "copy_blocks on an H100 (optpatch validate, docs/benchmarks.md): VLA + from_blob(...).to() -> vector + "
    "cudaMemcpyAsync took host time per call from 32.1 to 16.8 us at 32 layers and 1 block pair (1.9x, the same "
    "at 16 and 256 pairs); with 5 ms of GPU work queued the old form returned after 5,009 us (.to() waits for the "
    "queue), the new after 23 us"
)


class FromBlobAsyncCopy(Rule):
    """
    Replace `torch::from_blob(host, sizes, dtype).to(device)` with `torch::empty` on the device and a `cudaMemcpyAsync`.

    ## What it does
    Finds `torch::from_blob(ptr, {n, ...}, dtype).to(device)` (also
    `at::from_blob`, `.to(device, /*non_blocking=*/false)` and `.cuda()`)
    where `ptr` is a local array or `std::vector` of the same host function
    (or a `std::vector` it takes by value), and rewrites it to allocate the
    tensor on the device and copy the bytes asynchronously on the device's
    current stream:

        T t = torch::empty({n, ...}, torch::dtype(dtype).device(device));
        C10_CUDA_CHECK(cudaMemcpyAsync(t.data_ptr(), ptr, n * sizeof(elem),
            cudaMemcpyHostToDevice, at::cuda::getCurrentCUDAStream(device.index())));

    A copy that initialises a new local (`T t = ...;`) becomes that
    declaration. A copy that is returned (`return from_blob(...).to(d);`) or
    passed to a call (`out.copy_(from_blob(...).to(d))`) goes through a new
    local, `<buffer>_on_device`, declared just before its statement. Where
    no statement can go first with the same effect (a condition, a branch of
    an unbraced `if` or a loop, after a short circuit or `?:`, a member
    initialiser, or a statement that also touches the buffer), the copy is
    an immediately-invoked lambda in its place: `[&] { auto t = ...;
    C10_CUDA_CHECK(...); return t; }()`.

    The byte count comes from the sizes (names, arithmetic, `v.size()`-like
    calls and casts: evaluated a second time, unchanged) and the element type
    the call names (`torch::kInt64` -> `int64_t`), directly or through a
    local options variable nothing changes after its declaration
    (`auto opts = torch::TensorOptions().dtype(torch::kInt64);`, read
    afterwards only through its const methods). The device is a variable,
    `x.device()`, or made in place of names and literals
    (`torch::Device(torch::kCUDA, i)`). `#include <ATen/cuda/CUDAContext.h>`
    is added if missing.

    ## Why is this bad
    `.to(device)` of a CPU tensor built on pageable memory is a synchronous
    copy: the host waits until every kernel already queued on the stream has
    finished, then for the copy. In a launcher that builds a small pointer
    table per call this wait dominates the call and serialises the host with
    the GPU.

    ## Example
    ```cpp
    int64_t ptrs[num_layers];  // filled on the host
    torch::Tensor table = torch::from_blob(ptrs, {num_layers}, torch::kInt64).to(device);
    ```

    ## Use instead
    ```cpp
    int64_t ptrs[num_layers];  // filled on the host
    torch::Tensor table = torch::empty({num_layers}, torch::dtype(torch::kInt64).device(device));
    C10_CUDA_CHECK(cudaMemcpyAsync(table.data_ptr(), ptrs, num_layers * sizeof(int64_t),
        cudaMemcpyHostToDevice, at::cuda::getCurrentCUDAStream(device.index())));
    ```

    ## Fix safety
    The copy is queued on the current stream of the tensor's device, the
    stream `.to()` itself uses, so everything queued there later (kernels
    that read the table, torch ops on it) still sees the data. The host no
    longer waits: the buffer is pageable (a local array or `std::vector` of
    this function, never passed to `cudaHostRegister`), and
    `cudaMemcpyAsync` from pageable memory stages the bytes before it
    returns, so the buffer may be changed or freed right after.

    `safe` when, in addition, the device is proven to be a CUDA device before
    the copy (`torch::kCUDA`, `TORCH_CHECK(x.is_cuda())`, or a `CUDAGuard` /
    `OptionalCUDAGuard` on it, which rejects other devices), and every use of
    the result stays on that stream: metadata and torch ops, and raw
    pointers passed only to kernel launches whose stream is
    `getCurrentCUDAStream()` under a guard on the same device (or
    `getCurrentCUDAStream(device.index())`).

    And only where the build compiles the file with CUDA's headers: a `.cu`
    (nvcc), or a file whose `compile_commands.json` entry has CUDA's include
    folder (or is nvcc's), or a source of a `CUDAExtension` in `setup.py`
    (read as text). A `.cpp` of a CPU-only extension cannot include
    `ATen/cuda/CUDAContext.h`.

    `validate` when the device is not proven to be CUDA before the copy (a
    CPU device would make the new code fail where `.to()` copied), the
    result leaves the function or reaches code optpatch cannot see (it may
    be used on another stream): returned, stored in a member, passed to a
    function that is not torch's, or when no build file says the file is
    compiled with CUDA's headers (`--validate` then needs `--build` to
    compile it).

    Kept: a buffer that may be pinned or device memory (a parameter, a
    tensor's `data_ptr()`), options other than a plain dtype (a device in
    them means the pointer is device memory), sizes that are not a braced
    list or would be evaluated twice with side effects, strides, a kernel
    launched with another or the default stream, `.to(..., true)` (already
    non-blocking), a function that switches streams or devices, and a copy
    used any other way (`from_blob(...).to(d).sum()`).

    ## Known problems
    The host stops waiting for queued GPU work at this line. Code after it
    that relied on that implicit synchronisation (reading pinned memory an
    earlier kernel wrote, host timing) is not recognised. Without the
    project's headers a call whose types are unknown (template-dependent
    arguments, types the prelude lacks) is reported, not analysed; with them
    (docs/cpp-frontend.md, "Header modes") torch's own declarations decide.
    A macro from a header that chains `.to()` onto `from_blob` out of sight
    of the file's text is not looked for.

    With a `.clang-format`, the allocation and the copy are laid out within
    its `ColumnLimit` as clang-format breaks such statements
    (`ContinuationIndentWidth`, `BinPackArguments`, `AlignAfterOpenBracket`;
    docs/formatting.md); the `#include <ATen/cuda/CUDAContext.h>` goes
    after the last include, which `SortIncludes` may reorder. Only the
    declaration form is laid out so: the new local before a `return`,
    argument or member initialiser, and the immediately-invoked lambda, keep
    a fixed layout (the copy broken once before `cudaMemcpyHostToDevice`),
    which clang-format may re-wrap.

    ## Measured impact
    copy_blocks on an H100 (torch 2.11, CUDA 13.0; `optpatch validate`,
    docs/benchmarks.md), this rule with OPT201 on the same pointer tables:
    host time per call 32.1 -> 16.8 us at 32 layers and 1 block pair (1.9x),
    the same ratio at 16 and 256 pairs; GPU time 1.56x at 1 pair, 1.03x at
    256; with 5 ms of GPU work queued, the old form returned after 5,009 us,
    the new one after 23 us.

    ## References
    - https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html (pageable memory and cudaMemcpyAsync)
    - https://pytorch.org/cppdocs/notes/tensor_creation.html
    """

    code = "OPT202"
    name = "from-blob-async-copy"
    summary = "torch::from_blob(host, sizes, dtype).to(device) -> torch::empty on the device + cudaMemcpyAsync"
    language = "cpp"
    default_tier = "safe"
    version = 3  # 3: set-up code keeps its class as the size; 2: returned, argument and member forms; the build's CUDA headers; torch's own headers
    tags = ("performance", "cuda", "c++")
    trigger_words = ("from_blob",)

    VALID = [
        # A parameter pointer may be pinned or device memory.
        "void f(int64_t* p, int n, torch::Device d) {\n  auto t = torch::from_blob(p, {n}, torch::kInt64).to(d);\n}\n",
        # .to(dtype) is a conversion, not a copy to a device.
        "void f(int n) {\n  std::vector<float> v(n);\n  auto t = torch::from_blob(v.data(), {n}, torch::kFloat32).to(torch::kHalf);\n}\n",
        # The element type is not named by the call.
        "void f(int n, torch::Tensor x) {\n  std::vector<float> v(n);\n  auto t = torch::from_blob(v.data(), {n}, x.options()).to(x.device());\n}\n",
    ]
    INVALID = [
        Example(
            "#include <ATen/cuda/CUDAContext.h>\n"
            "void f(int n) {\n  std::vector<int64_t> v(n);\n"
            "  torch::Tensor t = torch::from_blob(v.data(), {n}, torch::kInt64).to(torch::kCUDA);\n"
            "  t.zero_();\n}\n",
            "#include <ATen/cuda/CUDAContext.h>\n"
            "void f(int n) {\n  std::vector<int64_t> v(n);\n"
            "  torch::Tensor t = torch::empty({n}, torch::dtype(torch::kInt64).device(torch::kCUDA));\n"
            "  C10_CUDA_CHECK(cudaMemcpyAsync(t.data_ptr(), v.data(), n * sizeof(int64_t),\n"
            "      cudaMemcpyHostToDevice, at::cuda::getCurrentCUDAStream()));\n"
            "  t.zero_();\n}\n",
        ),
        Example(
            "void f(torch::Tensor x, int n) {\n  TORCH_CHECK(x.is_cuda());\n  float buf[n];\n"
            "  auto t = at::from_blob(buf, {n, 2}, at::TensorOptions().dtype(at::kFloat)).to(x.device(), /*non_blocking=*/false);\n"
            "  x.add_(t.sum());\n}\n",
            "#include <ATen/cuda/CUDAContext.h>\n"
            "void f(torch::Tensor x, int n) {\n  TORCH_CHECK(x.is_cuda());\n  float buf[n];\n"
            "  auto t = at::empty({n, 2}, at::TensorOptions().dtype(at::kFloat).device(x.device()));\n"
            "  C10_CUDA_CHECK(cudaMemcpyAsync(t.data_ptr(), buf, sizeof(float) * n * 2,\n"
            "      cudaMemcpyHostToDevice, at::cuda::getCurrentCUDAStream(x.device().index())));\n"
            "  x.add_(t.sum());\n}\n",
        ),
        # Passed straight to a torch op: the copy goes through a new local before the statement.
        Example(
            "#include <ATen/cuda/CUDAContext.h>\n"
            "void refill(torch::Tensor& out, int n) {\n  TORCH_CHECK(out.is_cuda());\n  std::vector<int64_t> host(n, 7);\n"
            "  out.copy_(torch::from_blob(host.data(), {n}, torch::kInt64).to(out.device()));\n}\n",
            "#include <ATen/cuda/CUDAContext.h>\n"
            "void refill(torch::Tensor& out, int n) {\n  TORCH_CHECK(out.is_cuda());\n  std::vector<int64_t> host(n, 7);\n"
            "  auto host_on_device = torch::empty({n}, torch::dtype(torch::kInt64).device(out.device()));\n"
            "  C10_CUDA_CHECK(cudaMemcpyAsync(host_on_device.data_ptr(), host.data(), n * sizeof(int64_t),\n"
            "      cudaMemcpyHostToDevice, at::cuda::getCurrentCUDAStream(out.device().index())));\n"
            "  out.copy_(host_on_device);\n}\n",
        ),
    ]

    @classmethod
    def needs_headers(cls, unit: CppUnit, findings: list[Finding]) -> bool:
        """Any finding outside device code: its verdict rests on torch's declarations (`from_blob`, `.to()`,
        `Device`), which the header-free parse knows only through the prelude's stand-ins."""
        asked = [f for f in findings if f.keep_category is not KeepCategory.DEVICE_CODE]
        for finding in asked:
            unit.ask_headers(f"{cls.code} L{finding.line}: its verdict rests on torch's declarations")
        return bool(asked)

    def check(self, unit: CppUnit) -> Iterator[Judgement]:
        if not may_chain_a_copy(unit):
            return  # neither path below could report: spared the tree and the whole file's tokens
        analysed: set[int] = set()
        for node in unit.nodes:
            if node.kind is CursorKind.CALL_EXPR and node.spelling == "from_blob" and is_torch_from_blob(unit, node):
                to_call = chained_copy(node)
                if to_call is not None:
                    analysed.update(t.start for t in unit.tokens_in(node.start, node.end) if t.spelling == "from_blob")
                    yield self._examine(unit, node, to_call)
        yield from self._unparsed(unit, analysed)

    def _examine(self, unit: CppUnit, from_blob: Node, to_call: Node) -> Judgement:
        """The judgement of one copy: Kept at the first obligation that blocks it (site.py, then
        obligations.py), else the rewrite with its tier and proof."""
        where = unit.where(from_blob)
        at = unit.position(from_blob.start)
        context = unit.run_context(from_blob, where.function)
        if where.place is not Place.HOST:
            category = KeepCategory.DEVICE_CODE if where.place is Place.DEVICE else KeepCategory.UNRESOLVED
            return Judgement(at, context, Kept(f"not host code: {where.reason}", category))
        site = site_of(unit, from_blob, to_call, where.function)
        if isinstance(site, Kept):
            return Judgement(at, context, site)
        tiered = obligations(unit, site, outermost_function(from_blob))
        if isinstance(tiered, Kept):
            return Judgement(at, context, tiered)
        return Judgement(at, context, self._proven(unit, site, *tiered))

    def _unparsed(self, unit: CppUnit, analysed: set[int]) -> Iterator[Judgement]:
        """`from_blob(...).to(` that did not resolve to torch's from_blob: reported, never rewritten."""
        tokens = unit.tokens
        dependent = {
            node.end for node in unit.nodes
            if node.kind is CursorKind.OVERLOADED_DECL_REF and node.spelling == "from_blob"
        }
        for index, token in enumerate(tokens):
            if token.spelling != "from_blob" or token.start in analysed or index + 1 >= len(tokens):
                continue
            if tokens[index + 1].spelling != "(":
                continue
            close = matching_bracket(tokens, index + 1)
            if close is None or close + 2 >= len(tokens):
                continue
            if tokens[close + 1].spelling == "." and tokens[close + 2].spelling in ("to", "cuda"):
                line, col = unit.position(token.start)
                without = "" if unit.with_headers else " without the project's headers"
                reason = (
                    "a call with template-dependent arguments: its types are unknown until instantiation; not analysed"
                    if token.end in dependent
                    else f"this statement does not parse{without} (unknown types in it); not analysed"
                )
                yield Judgement((line, col), Context.CALL, Kept(reason, KeepCategory.UNRESOLVED))

    @staticmethod
    def _proven(unit: CppUnit, site: Site, tier: Tier, proof: list[str]) -> Proven:
        edits, replacement = rewrite(unit, site)
        impact, basis = Impact.HIGH, IMPACT_BASIS
        return Proven("; ".join(proof), tier, tuple(sorted(edits)), impact, basis, replacement, tuple(proof))
