"""OPT201, vla-to-vector: the rule's declarations, manual and examples.

The analyses beside it, in the order `check` runs them: screen.py (whether
the text may declare an array at all, before the parse), candidates.py
(which declarations to judge), obligations.py (the proof obligations, in
order), bound.py (a run-time bound), declaration.py (a plain `T name[n];`),
uses.py (every use understood), repetition.py (how often it runs: the
tier), edits.py (the rewrite).
"""

from __future__ import annotations

from typing import Iterator

from optpatch.rule import Example, Finding, Judgement, Rule
from optpatch.rule.cpp import CppUnit

from . import candidates  # through the module: tests/cpp/test_opt201_fast_path.py swaps in the plain walk
from .obligations import examine
from .screen import may_declare_an_array


class VlaToVector(Rule):
    """
    Replace a variable-length array in host code with `std::vector`.

    ## What it does
    Finds `T name[n];` whose bound `n` is provably a run-time value (a
    function parameter, a non-constant variable, a call to a non-constexpr
    function, or a constant initialised from one of those) in host code, and
    rewrites it to `std::vector<T> name(n);`. Uses where the array decays to
    a pointer (a function argument such as `memcpy(name, ...)` or
    `torch::from_blob(name, ...)`, a pointer initialisation or assignment,
    pointer arithmetic, `return name`) become `name.data()`; indexing
    `name[i]` stays as it is. `#include <vector>` is added once if missing.

    ## Why is this bad
    Variable-length arrays are not ISO C++: MSVC rejects them, and GCC and
    Clang accept them only as an extension (`-pedantic` and
    `-Wvla-cxx-extension` say so). A large or attacker-controlled bound also
    overflows the stack without any error.

    ## Example
    ```cpp
    void copy_blocks(std::vector<torch::Tensor> const& caches) {
      const int num_layers = caches.size();
      int64_t ptrs[num_layers];
      for (int i = 0; i < num_layers; ++i) ptrs[i] = reinterpret_cast<int64_t>(caches[i].data_ptr());
      auto table = torch::from_blob(ptrs, {num_layers}, torch::kInt64);
    }
    ```

    ## Use instead
    ```cpp
    void copy_blocks(std::vector<torch::Tensor> const& caches) {
      const int num_layers = caches.size();
      std::vector<int64_t> ptrs(num_layers);
      for (int i = 0; i < num_layers; ++i) ptrs[i] = reinterpret_cast<int64_t>(caches[i].data_ptr());
      auto table = torch::from_blob(ptrs.data(), {num_layers}, torch::kInt64);
    }
    ```

    ## Fix safety
    `safe`, with a proof: clang types the declaration as a variable-length
    array (and warns so), the bound parses without errors and depends on a
    run-time value on every evaluation, the site is in host code (no
    enclosing `__global__`, `__device__` or `__host__ __device__` function or
    lambda, and a declaration head without unresolved macros), and every
    reference to the array is understood: indexing, a decay to a pointer, a
    range-for, or a by-reference lambda capture. A VLA cannot bind to a
    deduced reference parameter, so an argument of a call whose declaration
    is not visible is still a pointer. `std::vector` value-initialises its
    elements, where the array left them indeterminate: reading them was
    undefined behaviour before, so no defined program changes. An array of
    pointers to const (`const float* rows[n]`) is an ordinary VLA of
    pointers; a const array of objects (`const int a[n]`, `T* const p[n]`)
    is kept: `std::vector` cannot hold const elements.

    `validate` where the allocation would be repeated: a declaration inside
    a loop, in a lambda handed to a call that may run it per element or tile
    (`at::parallel_for`, `std::for_each`; not a dtype dispatch, which runs
    it once), or in a function this file calls inside a loop or hands to
    another call as a callback (not a registration: pybind11's `m.def` or
    the torch library's `m.impl` hands it to Python, which calls it once
    per call). `std::vector` allocates on the heap every
    time; PyTorch reverted such a change on a hot path (pytorch #134140).

    Kept, with the reason: `sizeof(name)` or `decltype(name)`, `&name` (the
    address of the whole array), a reference bound to it (`auto& r = name`),
    use as a truth value, a multi-dimensional array, `bool` elements
    (`std::vector<bool>` is a bitset without `.data()`), a declaration with
    several declarators, qualifiers or attributes, a use the parser could not
    see (inside code that did not parse without the project's headers, or
    through a macro), and any bound that did not resolve (a constant from a
    header the parse could not see names the undeclared names, and the
    missing header when the parse with headers could not find one). Device
    code is never rewritten: an array there whose bound the parse could not
    evaluate is not reported at all (nvcc has no variable-length arrays in
    device code, so it is a constant), and `__shared__` and `__constant__`
    arrays are never candidates. A bound that is really a compile-time
    constant gets an advice to use `std::array`, never a rewrite.

    ## Known problems
    optpatch first parses each file without the project's headers, against
    a small stand-in for torch, CUDA and the standard library, and parses it
    again with its headers where that leaves a question (a finding, or a
    declaration the parse dropped; docs/cpp-frontend.md, "Header modes").
    Where the headers cannot be found, an array whose element type or bound
    comes from them (a project's own dispatch macro, a `constexpr` from a
    header) is kept or not seen: a false negative, never a wrong
    rewrite. A parse with headers starts only for a host candidate whose
    verdict a header may change; a bound made only of names from headers,
    in a function whose host or device side an unknown macro hides
    (`CUTLASS_HOST_DEVICE`), is kept without one. A per-element caller in another file is not seen: the fix is
    then `safe` although the function may run per tile.

    With a `.clang-format`, the `std::vector` declaration keeps to its
    `ColumnLimit` (docs/formatting.md); a `.data()` added at a decayed use
    can push that line past it, and `#include <vector>` goes after the last
    include, where `SortIncludes` may want it elsewhere.

    ## Measured impact
    None on its own: this is a portability fix, and `std::vector` adds a heap
    allocation and a zero fill per call. The measurement of the copy_blocks
    host code (VLA plus `torch::from_blob(...).to(device)`, rewritten to a
    vector plus `cudaMemcpyAsync`: 32.1 -> 16.8 us host time per call with 1
    block pair on an H100, docs/benchmarks.md) belongs to this rule and
    OPT202 together, and comes from OPT202's asynchronous copy.

    ## References
    - https://clang.llvm.org/docs/DiagnosticsReference.html#wvla-cxx-extension
    - https://en.cppreference.com/w/cpp/container/vector
    - vLLM's `copy_blocks_mla` uses `std::vector` with `.data()`; pytorch #134140.
    """

    code = "OPT201"
    name = "vla-to-vector"
    summary = "variable-length array in host code -> std::vector, decayed uses -> .data()"
    language = "cpp"
    default_tier = "safe"
    version = 5  # 2: fast path; 3: line markers; 4: attributes keep; 5: const pointers, repeated calls, headers
    tags = ("portability", "c++")
    trigger_words = ("[",)

    VALID = [
        # A constant bound is not a VLA.
        "void f() {\n  constexpr int n = 4;\n  int a[n];\n  a[0] = 1;\n}\n",
        # Device code is never rewritten.
        "__global__ void k(int n) {\n  float a[n];\n  a[0] = 1;\n}\n",
        # sizeof of the array would change meaning.
        "void f(int n) {\n  int a[n];\n  int s = sizeof(a);\n}\n",
        # A bound that does not resolve without headers: keep.
        "void f() {\n  constexpr int n = 16 / sizeof(some_vector_t);\n  float a[n];\n  a[0] = 1;\n}\n",
        # Multi-dimensional.
        "void f(int n) {\n  int a[n][4];\n  a[0][0] = 1;\n}\n",
        # An alignment or another attribute: std::vector's buffer would not keep it.
        "void g(float* p);\nvoid f(int n) {\n  alignas(64) float a[n];\n  g(a);\n}\n",
        "void g(float* p);\nvoid f(int n) {\n  [[gnu::aligned(64)]] float a[n];\n  g(a);\n}\n",
        "void g(float* p);\nvoid f(int n) {\n  float a [[maybe_unused]] [n];\n  g(a);\n}\n",
    ]
    INVALID = [
        Example(
            "#include <cstring>\nvoid f(int n, const int* src) {\n  int a[n];\n  memcpy(a, src, n * sizeof(int));\n  a[0] += 1;\n}\n",
            "#include <cstring>\n#include <vector>\nvoid f(int n, const int* src) {\n  std::vector<int> a(n);\n  memcpy(a.data(), src, n * sizeof(int));\n  a[0] += 1;\n}\n",
        ),
        Example(
            "#include <vector>\nvoid g(float* p);\nvoid f(const std::vector<float>& v) {\n  const int n = v.size();\n  float a[n];\n  g(a);\n}\n",
            "#include <vector>\nvoid g(float* p);\nvoid f(const std::vector<float>& v) {\n  const int n = v.size();\n  std::vector<float> a(n);\n  g(a.data());\n}\n",
        ),
        # An array of pointers to const is an ordinary VLA.
        Example(
            "#include <vector>\nvoid g(const float** rows, int n);\nvoid f(const float* base, int n) {\n"
            "  const float* rows[n];\n  for (int i = 0; i < n; ++i) rows[i] = base + i;\n  g(rows, n);\n}\n",
            "#include <vector>\nvoid g(const float** rows, int n);\nvoid f(const float* base, int n) {\n"
            "  std::vector<const float*> rows(n);\n  for (int i = 0; i < n; ++i) rows[i] = base + i;\n  g(rows.data(), n);\n}\n",
        ),
        # Inside a loop std::vector allocates per iteration: validate tier.
        Example(
            "#include <vector>\nvoid g(float* p, int n);\nvoid f(int rows, int n) {\n"
            "  for (int r = 0; r < rows; ++r) {\n    float scratch[n];\n    g(scratch, n);\n  }\n}\n",
            "#include <vector>\nvoid g(float* p, int n);\nvoid f(int rows, int n) {\n"
            "  for (int r = 0; r < rows; ++r) {\n    std::vector<float> scratch(n);\n    g(scratch.data(), n);\n  }\n}\n",
            tier="validate",
        ),
    ]

    @classmethod
    def screen_text(cls, text: str) -> bool:
        """Only a file whose text may declare an array of non-literal size is parsed for this rule (screen.py)."""
        return may_declare_an_array(text)

    @classmethod
    def needs_headers(cls, unit: CppUnit, findings: list[Finding]) -> bool:
        """A host candidate whose verdict may change with a declaration this parse could not see (`check` notes
        each: a fix that passes the array to a call clang could not resolve, an unresolved bound or use, a
        run-time bound where host and device cannot be told apart; a fix proven from the file's own facts needs
        no headers),
        and any `name[n]` that reads as a host declaration the header-free parse dropped (`std::complex<float>
        buf[n];` with no declaration of std::complex). Device code and `__shared__` arrays never need them."""
        if any(question.startswith(f"{cls.code} ") for question in unit.header_questions):
            return True
        if candidates.hidden_declaration(unit):
            unit.ask_headers(f"{cls.code}: a `name[n]` that reads as a host declaration the parse dropped")
            return True
        return False

    def check(self, unit: CppUnit) -> Iterator[Judgement]:
        for declaration in candidates.array_declarations(unit):
            examined = examine(unit, declaration)
            if examined is not None:
                context, verdict = examined
                yield Judgement(unit.position(declaration.start), context, verdict)
