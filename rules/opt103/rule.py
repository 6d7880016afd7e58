from __future__ import annotations

import ast
from typing import Iterator

from optpatch.rule import Example, Judgement, Rule
from optpatch.rule.python import CallIndex, PythonModule

from .edits import rewrite
from .no_gain import dead_store
from .obligations import prove
from .proof import Proof
from .screen import copies
from .site import sites


class PinnedAsyncH2D(Rule):
    """
    Copy freshly built host data to the GPU from pinned memory with `non_blocking=True`, so the host does not wait.

    ## What it does
    Finds host-to-device copies of host data built on the spot and makes them
    asynchronous:

    - `torch.tensor(data).to(d)` / `.cuda()` ->
      `torch.tensor(data, pin_memory=True).to(d, non_blocking=True)`;
    - `torch.tensor(data, device=d)` ->
      `torch.tensor(data, pin_memory=True).to(d, non_blocking=True)`, under
      the same obligations and tiers as `torch.tensor(data).to(d)`: `safe`
      where `d` is provably CUDA, `validate` where it is a device only by
      its name (`device=self.device`); a `device=` that names the host is
      left alone;
    - the legacy constructors of a list, `torch.LongTensor(ids).to(d)`,
      `torch.FloatTensor(vals).cuda()` (and bound to a name, then moved):
      they take no `pin_memory=`, so the copy is pinned at the move,
      `torch.LongTensor(ids).pin_memory().to(d, non_blocking=True)`. Only a
      provable list or tuple is data (`torch.FloatTensor(n)` with an integer
      makes an uninitialised tensor of size n, `torch.LongTensor(t)` shares
      the tensor `t`): anything else is kept;
    - the legacy CUDA constructors of a list, `torch.cuda.LongTensor(ids)`,
      which convert the list on the host and copy it to the current CUDA
      device -> `torch.LongTensor(ids).pin_memory().cuda(non_blocking=True)`;
    - where `data` is not provably Python data (a NumPy array, a tensor, or
      unknown), `pin_memory=True` would raise ("Can't pin tensor constructed
      from numpy", "... from a variable"), so the tensor is pinned by a copy
      instead: `torch.tensor(a).pin_memory().to(d, non_blocking=True)`;
    - `torch.from_numpy(a).to(d)` and `torch.as_tensor(a).to(d)` ->
      `torch.from_numpy(a).pin_memory().to(d, non_blocking=True)` (they share
      the array's memory, so `.pin_memory()` copies it into a fresh pinned
      buffer);
    - a host tensor built in the same function, `t = torch.tensor(data)` or a
      CPU factory the function fills on the host (`t = torch.zeros(n)`,
      `t[i] = ...`), then `t.to(d)`: `pin_memory=True` goes into the
      constructor; `t = torch.from_numpy(a)` then `t.to(d)` becomes
      `t.pin_memory().to(d, non_blocking=True)`;
    - a source that is already pinned (`x.pin_memory().to(d)`,
      `torch.empty(n, pin_memory=True)` filled, then `.to(d)`) gets only
      `non_blocking=True`.

    `torch.zeros(n).cuda()` and the other factories whose values need no host
    data are OPT102's (create them on the device); this rule leaves them
    alone.

    ## Why is this bad
    A copy from pageable host memory is synchronous: `.to(d)` returns only
    after every kernel already queued on the GPU has run and the copy is done.
    In a model runner that prepares the next step's inputs while the GPU works
    on this one, that is a host stall every step. A copy from pinned memory
    with `non_blocking=True` is queued behind that work on the same stream and
    returns at once. People make this change by hand often: vLLM #2207, #7172
    (8.12 -> 8.34 requests/s, P90 inter-token latency 12.9 -> 11.5 ms), #35480
    (stalls over 1 ms: 9 of 430 -> 0 of 411), vllm-ascend #4113 (time per
    output token 17.91 -> 17.02 ms).

    ## Example
    ```python
    def step(self, token_ids: list[int]):
        ids = torch.tensor(token_ids, dtype=torch.long).cuda()
        self.input_ids[: ids.numel()].copy_(ids)
    ```

    ## Use instead
    ```python
    def step(self, token_ids: list[int]):
        ids = torch.tensor(token_ids, dtype=torch.long, pin_memory=True).cuda(non_blocking=True)
        self.input_ids[: ids.numel()].copy_(ids)
    ```

    ## Fix safety
    `safe` when every obligation holds:

    - the target is provably a CUDA device: `.cuda()`, `.cuda(i)`, `"cuda"`,
      `"cuda:N"`, an f-string starting with `cuda`, `torch.device("cuda"...)`,
      a name bound to one of those, or a call of a function of this file
      every return of which is one of those (OPT102's device evidence). A
      device known only by its name never makes this tier. `pin_memory=True` raises on a machine
      without CUDA and means nothing for other accelerators;
    - the copy is host to device: the data is provably host data (a list or
      tuple display, a comprehension, a number, `.tolist()`, a NumPy array, a
      parameter annotated `list[...]` or `np.ndarray`, a name bound to one);
      a device to host copy is never made non-blocking (the host would read
      the buffer before the copy lands);
    - the source is not written after the copy is queued. A temporary
      (`torch.tensor(...)`, `.pin_memory()`) is a fresh buffer nobody else
      holds, and PyTorch's caching host allocator keeps a pinned block alive
      until the copies queued from it complete. A named source that becomes
      pinned may, before the copy, only be written in place (`t[i] = v`,
      `t.fill_(...)`) or asked for metadata, and after it only for metadata;
    - the result is read on the stream that was current at the copy: in this
      function, outside any other `with torch.cuda.stream(...)` (or
      `.stream(...)`, `torch.cuda.graph(...)`) block than the copy's.

    `validate`: the device is a device only by its name, or its type is not
    known from this file (`x.device`, a parameter `device`, `.to(0)`); the
    data may be a tensor already on the device (a parameter without an
    annotation: `pin_memory` raises for it); the result escapes the function
    (returned, yielded, stored on `self`, in a container or a class instance,
    captured by a nested function, or a module or class attribute), where the
    reader's stream is unknown; it is read on another stream after a visible
    `wait_stream`, `wait_event` or `synchronize`; the function switches
    streams with `set_stream`; `.to(d, dtype)`, whose conversion moves from
    the CPU to the GPU (out-of-range float-to-integer conversions differ).

    Kept, with the reason: a copy to the CPU (nothing to gain) or from a
    source on a device (a device to host copy must block); a target that is
    not a device, or not CUDA; a source written or shared after the copy; a
    read on another stream with no visible synchronisation (measured on an
    H100: 20 of 20 trials read wrong values); `non_blocking=True` already from
    pinned memory, `non_blocking=False` or `pin_memory=` written out (a
    choice, kept as written); a result never read (the blocking copy may be
    the point, as in a health probe); a list whose length is a runtime size
    (`[f(i) for i in range(n)]`, `[0] * n`, `list(range(n))`) or above 1,024
    elements: converting the list dominates, so pinning buys nothing; a copy
    followed in the same function, loop body and stream by a wait on the host
    (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `synchronize()`, or the
    result read as a Python value: an f-string, `float()`, `if`, `assert`),
    as in `torch.tensor([flag], device="cuda")`, an all-reduce, then
    `.item()`: the host waits there for all queued work anyway, so the stall
    only moves; a copy the host reads back in its own statement (inside an
    `assert`, an `if` or `while` test, `.item()`, `.tolist()`, `int(...)`,
    a slice bound), such as `assert torch.equal(out, torch.tensor([0, 2],
    device="cuda"))`; in tests, a literal constant of 16 numbers or fewer,
    whose copy gains nothing measurable.

    A copy whose result is assigned again before anything reads it (a dead
    store) gets advice instead of a fix: delete the line.

    `non_blocking=True` on a copy from pageable memory gets advice: it still
    waits for queued GPU work (a hidden synchronisation, vLLM #54660,
    #51841); pin the source to make it asynchronous.

    ## Known problems
    Under black or ruff, the keywords are laid out as the formatter would
    lay the statement out (docs/formatting.md); where optpatch does not
    reproduce the statement's layout (a newer black's choices, a statement
    the file does not lay out as its formatter does) and the edit passes the
    line limit, the site is kept rather than written in a layout the
    formatter check would reject.
    Pinned memory is page-locked and scarce on some systems (WSL: vLLM guards
    it with `is_pin_memory_available()`); the fix does not add such a guard.
    Pinning a large tensor costs a host copy. Names are resolved within one
    function, flow-insensitively. A callee that keeps its argument and reads
    it later on another stream is not seen (classes and container methods
    count as keeping it; other calls do not). A call that is not torch's is
    taken to queue its work on the current stream, as PyTorch's custom ops
    must. A compiled extension may not: fairseq's `ngram_repeat_block_cuda`
    launches on the legacy default stream (`kernel<<<grid, block>>>`, no
    stream), which does not wait for a copy queued on a side stream. So a
    result read by a module named as extensions are (`amp_C`,
    `fused_layer_norm_cuda`, `*_cpp`, `*_ext`) is `validate`. An extension
    named otherwise is not recognised. `.pin_memory()` returns a
    tensor that is already pinned as it is, so `torch.from_numpy(a)` over an
    array that is itself a view of pinned memory is not copied, and a later
    write to that array would race with the copy: not tracked. The rule does
    not know the length of a list it cannot see, and says so.

    ## Measured impact
    Host time per call, median, on an H100 with torch 2.11 (docs/benchmarks.md):
    with 5 ms of GPU work queued, every pageable form waited 5 ms or more,
    and the pinned non-blocking form returned in 24-170 us for lists up to
    1,024 elements and in 122 us for a 1 MiB array. Idle, a 16-element list
    went 17 -> 14 us, a 1 MiB array 94 -> 30 us and a 64 MiB array 7.41 ->
    0.78 ms; a 1,024-element list gained nothing (157 -> 155 us; an earlier
    run had it slower pinned, 158 -> 236 us). A 65,536-element list took
    9.5 ms either way.
    The gain is the host stall removed when GPU work is queued, so a copy on a
    per-step path is reported as high value, an ordinary call as medium and
    set-up code as low.

    ## References
    - https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html
    - https://pytorch.org/docs/stable/generated/torch.Tensor.pin_memory.html
    - https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html
    - vLLM #2207, #7172, #35480, #54660, #51841; vllm-ascend #4113
    """

    code = "OPT103"
    name = "pinned-async-h2d"
    version = 3  # 3: set-up code keeps its class as the size; every device of `torch.tensor(data, device=d)`, legacy (CUDA) constructors, devices from functions
    summary = (
        "torch.tensor(data).to(d) -> torch.tensor(data, pin_memory=True).to(d, non_blocking=True) where d is provably "
        "CUDA and the result is read on the copy's stream"
    )
    language = "python"
    default_tier = "safe"
    tags = ("performance", "transfer")
    # Every site is a move (`.to(`, `.cuda(`), `torch.tensor(..., device=d)` ("tensor(" is in three times as many
    # files of NeMo) or a legacy CUDA constructor (`torch.cuda.LongTensor(`).
    # Literal, so that a run reads them without importing the rule (rule_facts.py): test_scan_engine checks that
    # they are the legacy constructors of analysis.torch_api.
    trigger_words = (
        ".to(", ".cuda(", "device=", "cuda.FloatTensor(", "cuda.DoubleTensor(", "cuda.HalfTensor(",
        "cuda.BFloat16Tensor(", "cuda.ByteTensor(", "cuda.CharTensor(", "cuda.ShortTensor(", "cuda.IntTensor(",
        "cuda.LongTensor(", "cuda.BoolTensor(",
    )
    profiled_ops = ("aten::to", "aten::_to_copy", "aten::copy_", "cudaMemcpy", "cudaMemcpyAsync", "cudaStreamSynchronize")

    VALID = [
        # OPT102's: the values need no host data, so create them on the device.
        "import torch\ndef f(n):\n    return torch.zeros(n).cuda() + 1\n",
        # Already pinned and asynchronous.
        "import torch\ndef f(x):\n    return torch.tensor(x, pin_memory=True).to('cuda', non_blocking=True) * 2\n",
        # A copy to the host: nothing to make asynchronous.
        "import torch\ndef f(x):\n    return torch.tensor(x).to('cpu') * 2\n",
        # Read on a side stream with no synchronisation: the read could overtake the copy.
        "import torch\ndef f(x: list[int], s):\n    t = torch.tensor(x).cuda()\n    with torch.cuda.stream(s):\n"
        "        y = t * 2\n    return y\n",
        # The source is written after the copy.
        "import torch\ndef f(x: list[int]):\n    t = torch.tensor(x)\n    y = t.cuda()\n    t[0] = 7\n    return y * t.sum()\n",
        # Converting a list of runtime length dominates: nothing to gain.
        "import torch\ndef f(n):\n    return torch.tensor([i * i for i in range(n)]).cuda() + 1\n",
        # Not a CUDA device.
        "import torch\ndef f(x: list[int]):\n    return torch.tensor(x).to('xpu') + 1\n",
        # The result is never read: the blocking copy may be the point.
        "import torch\ndef probe():\n    torch.tensor([1.0]).cuda()\n",
    ]
    INVALID = [
        Example(
            "import torch\ndef f(ids: list[int]):\n    t = torch.tensor(ids, dtype=torch.long).cuda()\n    return t.sum()\n",
            # Past 79 columns in a file with no formatter and no longer line: the keyword goes on a line of its own.
            "import torch\ndef f(ids: list[int]):\n    t = torch.tensor(ids, dtype=torch.long,\n"
            "                     pin_memory=True).cuda(non_blocking=True)\n    return t.sum()\n",
        ),
        Example(
            "import numpy as np\nimport torch\ndef f(a: np.ndarray):\n    return torch.from_numpy(a).to('cuda:0') * 2\n",
            "import numpy as np\nimport torch\ndef f(a: np.ndarray):\n"
            "    return torch.from_numpy(a).pin_memory().to('cuda:0', non_blocking=True) * 2\n",
        ),
        Example(
            "import torch\ndef f(lens: list[int]):\n    d = torch.device('cuda')\n    t = torch.tensor(lens, device=d)\n"
            "    return t.cumsum(0)\n",
            "import torch\ndef f(lens: list[int]):\n    d = torch.device('cuda')\n"
            "    t = torch.tensor(lens, pin_memory=True).to(d, non_blocking=True)\n    return t.cumsum(0)\n",
        ),
        Example(
            "import torch\ndef f(rows, n):\n    table = torch.zeros(n, dtype=torch.int32)\n    table[: len(rows)] = 1\n"
            "    return table.cuda().sum()\n",
            "import torch\ndef f(rows, n):\n    table = torch.zeros(n, dtype=torch.int32, pin_memory=True)\n"
            "    table[: len(rows)] = 1\n    return table.cuda(non_blocking=True).sum()\n",
        ),
        Example(
            "import torch\ndef f(ids: list[int]):\n    return torch.tensor(ids).cuda()\n",
            "import torch\ndef f(ids: list[int]):\n    return torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)\n",
            tier="validate",
        ),
    ]

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files with a copy `check` looks at (`needs`)."""
        return bool(cls.needs(calls))

    @classmethod
    def needs(cls, calls: CallIndex) -> list[ast.AST]:
        """The copies `check` judges: `<call>(...).to(...)` / `.cuda(...)` where the inner call is a torch
        function or `pin_memory()`; `t.to(...)` where `t` is assigned a torch call or a `pin_memory()` call
        somewhere in the module (`check` reads that assignment in the same function); and `tensor(...,
        device=...)` through an import of torch, for any device but a literal host. Everything `check` reads
        lies in the function holding the copy (the source, the result's uses, the stream blocks), at module
        level (device names), or in a module-level function the copy's arguments call (its returns may be
        devices).
        """
        return copies(calls)

    def check(self, module: PythonModule) -> Iterator[Judgement]:
        """Judge every copy (site.py): the obligations in order (obligations.py), then the rewrite (edits.py)."""
        for site in sites(module):
            context = module.context(site.copy)
            verdict = prove(module, site)
            if isinstance(verdict, Proof):
                verdict = dead_store(module, site) or rewrite(module, site, verdict, context)
            yield Judgement(module.start(site.anchor), context, verdict)
