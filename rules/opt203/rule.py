"""OPT203, zeros-to-empty-cpp: the rule's declarations, manual and examples.

The analyses beside it, in the order `check` runs them: sites.py (the
`zeros` calls), obligations.py (the proof obligations, in order),
allocation.py (the local that holds the tensor), first_use.py (what is done
to it first), element_loop.py and kernel.py (the two full writes read from
the code).
"""

from __future__ import annotations

from typing import Iterator

from optpatch.rule import Context, Example, Finding, Judgement, Rule
from optpatch.rule.cpp import CppUnit

from .header_questions import unparsed_may_become_a_fix
from .obligations import examine
from .sites import factory_calls, may_call_a_factory, unparsed


class ZerosToEmptyCpp(Rule):
    """
    Replace `torch::zeros` / `at::zeros` / `zeros_like` with `empty` in C++/CUDA host code when every element is written before any read.

    ## What it does
    Finds `torch::zeros(sizes, options)`, `at::zeros(...)`,
    `torch::zeros_like(t, ...)` and `at::zeros_like(...)` in host code whose
    result initialises a local (`auto out = at::zeros(...);`) or is assigned
    to one (`out = at::zeros(...);`), follows the variable to its first use
    after that statement, and rewrites the factory to `empty` /
    `empty_like` (same arguments) when that first use writes every element:

    - `out.fill_(v)`, `out.zero_()` or `out.copy_(src)` (`copy_` broadcasts
      `src` to all of `out`, or throws), with `src` not mentioning `out`:
      **safe**;
    - `auto a = out.accessor<T, 1>();` or `T* p = out.data_ptr<T>();`
      followed at once by `for (i = 0; i < N; ++i) { a[i] = ...; ... }`
      where `N` is `out.numel()`, `out.size(0)` or the allocation's one
      size, unchanged, the write is the loop's first statement, its value
      does not read `out`, and the body never changes `i`: **safe**;
    - a kernel launch `k<<<...>>>(..., out.data_ptr<T>(), ...)` (or a packed
      accessor), or a torch `*_out` op given `out` as its output:
      **validate**.

    The first use counts only where it runs whenever the allocation does:
    in the same block, or inside an `AT_DISPATCH_*` lambda there (it runs
    once, or throws).

    ## Why is this bad
    `zeros` is `empty` plus a fill: on a GPU a kernel launch (6-10 us of
    host time) and a memset over the whole tensor, paid on every call. When
    the next thing that happens to the tensor is a full overwrite, the fill
    is wasted.

    ## Example
    ```cpp
    torch::Tensor out = torch::zeros({n, d}, x.options());
    scale_kernel<<<blocks, threads, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<float>(), n * d);
    ```

    ## Use instead
    ```cpp
    torch::Tensor out = torch::empty({n, d}, x.options());
    scale_kernel<<<blocks, threads, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<float>(), n * d);
    ```

    ## Fix safety
    `safe` only where host code provably writes every element before any
    read: a `fill_`, `zero_` or `copy_` of the whole tensor, or a 1-D
    element loop over every index, as its first use, on every path.

    `validate` where the first use is a kernel launch or a `*_out` op:
    whether the kernel's grid covers every element cannot be proven from
    the text. `--validate` applies the fix only with `--build`, which
    rebuilds the extension and runs the project's tests with torch's
    uninitialised-memory poisoning (`fill_uninitialized_memory`), which
    fills `at::empty` called from C++ too (docs/validation.md, "Poisoned
    memory in C++ extensions"): an element the kernel leaves unwritten is
    NaN there, not 0.

    When the kernel is defined in the same file, its body is read, and the
    site is **kept** when the kernel:
    - accumulates into the output (`atomicAdd` and the other `atomic*`
      functions, `out[i] += ...`, `out[i]++`): it reads the zeros;
    - reads the output (`out[i]` other than as an assignment's target);
    - hands the output pointer on (to a device function, pointer arithmetic):
      its writes are not seen;
    - returns early other than by a leading guard `if (...) return;`, or
      guards its threads by a parameter whose launch argument is not a size
      of the output (the grid may not cover it).

    Also kept: an allocation returned, stored, passed to any other call,
    viewed or sliced, read, or first used on a path that may not run (an
    `if`, a loop, a lambda) before it is written, including the early
    return of an empty input (`if (x.numel() == 0) return out;`); a size
    spelled with padding or rounding words (`pad`, `round`, `align`,
    `ceil`, `cdiv`): a kernel sized by the data may leave the padding
    unwritten for a caller to read; an allocation never used; device code.

    ## Known problems
    Only the first use is examined: a multi-dimensional element loop, or a
    tensor filled through several calls (`narrow(...).copy_` for each part),
    is kept. A kernel defined in another file is not read, so its
    accumulations are left to `--validate` to catch (a test that runs it
    sees NaN where it added to the zeros). A data pointer stored in a
    parameter struct for a launcher in another file (`params.out_ptr =
    out.data_ptr();`, as causal-conv1d and flash-attention do) is kept:
    optpatch does not follow it (docs/field.md, "OPT203 on real code").
    A `zeros` call that does not parse without the project's
    headers is reported, not analysed. In header mode a kept site asks for
    a parse with the project's headers only where the file's tokens show a
    next use that may write every element on every path: elsewhere the
    headers could not make it a fix, and its verdict stands
    (docs/cpp-frontend.md, "Which files, and what they cost").

    ## Measured impact
    From RULES.md (one H100, torch 2.11, CUDA 13.0): `zeros` -> `empty` on
    a CUDA device saves ~6-10 us of host time per call (the fill's launch)
    plus the memset: ~4 us up to 1 MiB, 25 us at 64 MiB, 328 us at 1 GiB
    (3.27 TB/s). FBGEMM #6257 (a pack kernel that writes every element):
    +16.8-28.3% on MI350X. The bundled kernels' `gather_cache_flash`
    allocates its output this way; `optpatch validate` applies this rule's
    fix there through `--validate --build` and times both builds on a GPU
    (kernels/README.md, docs/benchmarks.md).

    ## References
    - https://pytorch.org/cppdocs/notes/tensor_creation.html
    - https://pytorch.org/docs/stable/generated/torch.utils.deterministic.fill_uninitialized_memory.html
    - FBGEMM #6257, fvdb-core #212 (outputs written before read); FBGEMM #5754 (an unwritten tail)
    """

    code = "OPT203"
    name = "zeros-to-empty-cpp"
    summary = "torch::zeros / at::zeros / zeros_like -> empty where every element is written before any read"
    language = "cpp"
    default_tier = "safe"
    version = 2  # 2: set-up code keeps its class as the size, for the call graph to weigh
    tags = ("performance", "cuda", "c++", "memory")
    trigger_words = ("zeros",)

    VALID = [
        # Accumulated into by its first use.
        "void f(torch::Tensor x) {\n  auto out = torch::zeros_like(x);\n  out.add_(x);\n}\n",
        # Returned before anything writes it: the caller reads the zeros.
        "torch::Tensor f(int n) {\n  return torch::zeros({n}, torch::kFloat);\n}\n",
        # Written only on one path.
        "void f(torch::Tensor x, bool b) {\n  auto out = torch::zeros({4}, torch::kFloat);\n"
        "  if (b) out.fill_(1);\n  x.copy_(out);\n}\n",
    ]
    INVALID = [
        Example(
            "void f(torch::Tensor x) {\n  auto out = torch::zeros_like(x);\n  out.copy_(x);\n}\n",
            "void f(torch::Tensor x) {\n  auto out = torch::empty_like(x);\n  out.copy_(x);\n}\n",
        ),
        Example(
            "torch::Tensor f(int n) {\n  torch::Tensor out = at::zeros({n, 2}, torch::kFloat);\n"
            "  out.fill_(0.5);\n  return out;\n}\n",
            "torch::Tensor f(int n) {\n  torch::Tensor out = at::empty({n, 2}, torch::kFloat);\n"
            "  out.fill_(0.5);\n  return out;\n}\n",
        ),
    ]

    @classmethod
    def screen_text(cls, text: str) -> bool:
        """Only a file where a call of `zeros` or `zeros_like` can be is parsed for this rule (sites.py)."""
        return may_call_a_factory(text)

    def check(self, unit: CppUnit) -> Iterator[Judgement]:
        analysed: set[int] = set()
        for call in factory_calls(unit):
            analysed.update(t.start for t in unit.tokens_in(call.start, call.end) if t.spelling == call.spelling)
            context, verdict = examine(unit, call)
            yield Judgement(unit.position(call.start), context, verdict)
        for scope, at, kept in unparsed(unit, analysed):
            question = None if unit.with_headers else unparsed_may_become_a_fix(unit, scope)
            if question is not None:
                unit.ask_headers(f"{self.code} L{at[0]}: a `zeros` call this parse could not type; {question}")
            yield Judgement(at, Context.CALL, kept)

    @classmethod
    def needs_headers(cls, unit: CppUnit, findings: list[Finding]) -> bool:
        """A fix (the headers may keep it: `CHECK(out)` may read it), or a kept site `check` noted as one the
        headers may make a fix (obligations.py). Any other kept site is final: device code, or a first use the
        file's tokens show is no full write, or runs on a branch (header_questions.py). apex: 9 files asked for
        5-10 s each of precompiled headers for 21 kept sites, and got 21 kept sites back."""
        fixes = [finding for finding in findings if finding.fix is not None]
        if fixes:
            return super().needs_headers(unit, fixes)
        return any(question.startswith(f"{cls.code} ") for question in unit.header_questions)
