from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import libcst as cst

from optpatch.rule import Advice, CodeArea, Context, Edit, Example, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier
from optpatch.rule.python import (
    LOOP_NODES, SCOPE_NODES, CallIndex, FormattedEdits, PythonFormatter, PythonModule, preview, walk,
)
from optpatch.analysis.no_gain import literal_elements, read_back_at_once, rebound_before_read
from optpatch.analysis.torch_api import (
    CUDA_LEGACY_TENSOR_TYPES,
    DEVICE_CALLS,
    LEGACY_TENSOR_TYPES,
    is_true,
    keyword_arg,
)
from optpatch.analysis.torch_values import (
    Kind,
    classify,
    list_data,
    torch_callee,
)

from .function import Function
from .host_data import HostData, data_argument, host_data
from .names import last_name
from .quoting import shorten, statement_text
from .screen import copies
from .site import Site, sites
from .source import FILLED_FACTORIES, Source

LIST_BASIS = (
    "removes a host stall, not copy time: with 5 ms of GPU work queued a 16-element list's copy went 5,013 -> 24 us "
    "and a 1,024-element list's 5,014 -> 170 us; idle, 17 -> 14 us and 157 -> 155 us, within run-to-run noise (H100, "
    "torch 2.11, docs/benchmarks.md)"
)
UNKNOWN_LENGTH_BASIS = (
    LIST_BASIS + "; this list's length is not known here: the gain was measured up to 1,024 elements, and a "
    "65,536-element list costs 9 ms either way"
)
ARRAY_BASIS = (
    "with 5 ms of GPU work queued a 1 MiB array's copy went 5,045 -> 122 us and a 64 MiB array's 12.4 -> 1.5 ms; "
    "idle, 94 -> 30 us and 7.41 -> 0.78 ms (H100, torch 2.11, docs/benchmarks.md); the array's size is not known here"
)
PINNED_BASIS = (
    "the source is already pinned, so only the wait goes: with 5 ms of GPU work queued a blocking copy returned after "
    "5 ms or more, a non-blocking one from pinned memory in 24-170 us for up to 1,024 elements (H100, torch 2.11, "
    "docs/benchmarks.md)"
)
DEAD_STORE_BASIS = "a value assigned again before any read: nothing runs faster for rewriting it"
ONCE_BASIS = "one-time copy (module level, __init__, set-up): a host stall removed once, not per step"
HIDDEN_SYNC_BASIS = (
    "`non_blocking=True` from pageable memory still waits for queued GPU work (vLLM #54660, #51841; with 5 ms queued "
    "every pageable form waited 5 ms or more, H100, docs/benchmarks.md)"
)

# A literal constant of at most this many numbers, in a test, is not worth an edit (16 elements: 17 -> 14 us idle).
TINY_TEST_CONSTANT = 16
# Steps followed from the copy's result (views, names it is bound to) before its uses count as unknown.
MAX_FLOW_STEPS = 8
# `with X(...)` blocks that make another stream current (DeepSpeed's `get_accelerator().stream(s)` included).
_STREAM_CONTEXTS = frozenset({"stream", "StreamContext", "graph", "use_stream"})
_SYNCHRONISATIONS = frozenset({"wait_stream", "wait_event", "synchronize"})
# Calls after which the host has waited for the work queued on the current stream.
_HOST_WAITS = frozenset({"item", "tolist", "cpu", "numpy", "synchronize"})
_HOST_CONVERSIONS = frozenset({"float", "int", "bool", "str", "repr", "print", "format"})
# Methods and attributes whose result may share the copy's memory: its readers are the copy's readers.
_ALIASING_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze", "expand", "expand_as",
    "permute", "transpose", "t", "contiguous", "narrow", "select", "unbind", "split", "chunk", "detach",
    "requires_grad_", "as_strided", "to", "cuda", "type", "long", "int", "float", "half", "bfloat16", "double",
    "bool", "short", "byte", "char", "movedim", "swapaxes", "swapdims", "diagonal", "unfold", "real", "imag",
    "__getitem__",
})
_ALIASING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data"})
_ALIASING_TORCH_FUNCTIONS = frozenset(f"torch.{name}" for name in _ALIASING_METHODS | {"atleast_1d", "atleast_2d", "broadcast_to"})
# Calls that keep their argument: a container's methods, and classes (a dataclass of inputs, a namedtuple).
_STORING_METHODS = frozenset({"append", "extend", "insert", "add", "put", "put_nowait", "setdefault", "update", "appendleft"})
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "is_sparse"})
_METADATA_METHODS = frozenset({"size", "dim", "numel", "nelement", "element_size", "is_pinned", "stride", "is_contiguous"})


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
    count as keeping it; other calls do not). `.pin_memory()` returns a
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
    version = 2  # every device of `torch.tensor(data, device=d)`, legacy (CUDA) constructors, devices from functions
    summary = (
        "torch.tensor(data).to(d) -> torch.tensor(data, pin_memory=True).to(d, non_blocking=True) where d is provably "
        "CUDA and the result is read on the copy's stream"
    )
    language = "python"
    default_tier = "safe"
    tags = ("performance", "transfer")
    # Every site is a move (`.to(`, `.cuda(`), `torch.tensor(..., device=d)` ("tensor(" is in three times as many
    # files of NeMo) or a legacy CUDA constructor (`torch.cuda.LongTensor(`).
    trigger_words = (".to(", ".cuda(", "device=", *(f"cuda.{name.rsplit('.', 1)[1]}(" for name in LEGACY_TENSOR_TYPES))
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
        for site in sites(module):
            context = module.context(site.copy)
            verdict = _prove(module, site)
            if isinstance(verdict, Proof):
                verdict = _dead_store(module, site) or _rewrite(module, site, verdict, context)
            yield Judgement(module.start(site.anchor), context, verdict)


class Step(NamedTuple):
    """One obligation that holds: the tier it allows, and why it holds."""

    tier: Tier
    text: str


@dataclass(frozen=True)
class Proof:
    """Every obligation held: the fix's tier, the steps in order, and what they showed of the data (for the impact)."""

    tier: Tier
    steps: tuple[str, ...]
    data: "HostData | None"


# -- the obligations ------------------------------------------------------------------------------------


def _prove(module: PythonModule, site: Site) -> Proof | Kept | Advice:
    """Every obligation's step, or the verdict of the first that fails."""
    source = site.source
    target = _target(module, site)
    if isinstance(target, Kept):
        return target
    blocker = _source_blocker(module, site)
    if blocker is not None:
        return blocker
    flag = _non_blocking_flag(module, site)
    if flag is not None:
        return flag
    data = _data_verdict(module, source)
    if isinstance(data, Kept):
        return data
    data_step, found = data
    if source.named_buffer_is_pinned:
        written = _written_after_copy(module, site)
        if written is not None:
            return written
    readers = _Readers(module, site.function) if site.function is not None else None
    if readers is not None:
        readers.follow(site.copy)
    consumers = _consumer_verdict(module, site, readers)
    if isinstance(consumers, Kept):
        return consumers
    waits = _host_wait_after(module, site, readers) or _no_gain(module, site)
    if waits is not None:
        return waits
    steps = [target, data_step, consumers]
    if source.named_buffer_is_pinned:
        steps.append(Step(Tier.SAFE,
                          f"`{source.name.value}` is written only before the copy and read only for metadata after it"))
    if site.move is not None and site.move.dtype is not None:
        steps.append(Step(Tier.VALIDATE, f"`.to(..., {module.text(site.move.dtype)})`: the dtype conversion moves from "
                                         "the CPU to the GPU, where out-of-range float-to-integer conversions differ"))
    tier = max((step.tier for step in steps), key=lambda t: t.strictness)
    return Proof(tier, tuple(step.text for step in steps), found)


def _target(module: PythonModule, site: Site) -> Step | Kept:
    """Is the copy's target provably a CUDA device, and is the copy host to device?"""
    move = site.move
    if move is not None and move.blocker is not None:
        return Kept(move.blocker, move.blocker_category)
    if site.source.callee in CUDA_LEGACY_TENSOR_TYPES:
        return Step(Tier.SAFE, f"`{site.source.callee}` copies to the current CUDA device, as `.cuda()` does")
    source_device = _source_device(module, site.source) if move is not None else None
    if move is not None and move.method == "cuda":
        if source_device is not None:
            return source_device
        return Step(Tier.SAFE, "`.cuda()` copies to a CUDA device")
    device = move.device if move is not None else keyword_arg(site.copy, "device").value
    value = classify(module, device)
    text = module.text(device)
    if value.kind is Kind.NONE:
        return Kept("`.to(None)` moves nothing", KeepCategory.NOT_A_DEVICE)
    if value.kind is Kind.DEVICE and value.device_type == "cpu":
        if source_device is not None:
            return Kept(f"a copy to the host (`{text}`) of a tensor created on a device: made non-blocking, the host "
                        "could read the buffer before the copy lands", KeepCategory.DEVICE_TO_HOST)
        return Kept(f"`{text}` is the host: the data stays where it is, nothing to gain", KeepCategory.NO_GAIN)
    if source_device is not None:
        return source_device
    if value.kind is Kind.DEVICE and value.device_type not in (None, "cuda"):
        return Kept(f"`{text}` names a `{value.device_type}` device: this rule pins memory for CUDA copies only",
                    KeepCategory.NOT_CUDA)
    if value.kind is Kind.DEVICE and value.device_type == "cuda" and value.proven:
        return Step(Tier.SAFE, f"`{text}` is a CUDA device: {value.evidence}")
    if value.kind is Kind.INTEGER:
        return Step(Tier.VALIDATE,
                    f"`{text}` is a device index ({value.evidence}): the current accelerator's, not provably CUDA")
    return Step(Tier.VALIDATE,
                f"`{text}` is not provably a CUDA device: {value.evidence}; `pin_memory=True` raises without CUDA")


def _source_device(module: PythonModule, source: Source) -> Kept | None:
    """Why the source may not be in host memory (a constructor with a `device=` other than the CPU), or None."""
    if source.callee == "pin_memory":
        return None
    device = keyword_arg(source.call, "device")
    if device is None:
        return None
    value = classify(module, device.value)
    if value.kind is Kind.DEVICE and value.device_type == "cpu":
        return None
    return Kept(f"the source is created with `device={module.text(device.value)}`, not provably in host memory",
                KeepCategory.DEVICE_MEMORY)


def _source_blocker(module: PythonModule, site: Site) -> Kept | None:
    """What in the constructor's own arguments forbids the edit."""
    call = site.source.call
    if any(arg.star == "**" for arg in call.args):
        return Kept("`**kwargs` may already carry `pin_memory=` or `device=`", KeepCategory.OTHER)
    pinned = keyword_arg(call, "pin_memory")
    if pinned is not None and not is_true(pinned.value):
        return Kept(f"`pin_memory={module.text(pinned.value)}` is written out: pinning is chosen, kept as written",
                    KeepCategory.DELIBERATE)
    if site.move is None and site.source.callee not in CUDA_LEGACY_TENSOR_TYPES:
        requires_grad = keyword_arg(call, "requires_grad")
        if requires_grad is not None and not _is_false(requires_grad.value):
            return Kept("`requires_grad=`: with a move, the device copy would no longer be the leaf that receives "
                        "`.grad`", KeepCategory.OTHER)
        device = keyword_arg(call, "device").value
        if any(isinstance(node, cst.Call) and not module.refers_to(node.func, DEVICE_CALLS) for node in walk(device)):
            return Kept(f"`device={module.text(device)}` calls a function, which the move would call after the data is "
                        "converted", KeepCategory.CANNOT_SPELL)
    return None


def _non_blocking_flag(module: PythonModule, site: Site) -> Kept | Advice | None:
    """An existing `non_blocking=` decides: kept as written, or advice when it cannot work."""
    if site.move is None:
        return None
    flag = _non_blocking_argument(site.copy, site.move.method)
    if flag is None:
        return None
    if is_true(flag):
        if site.source.pinned:
            return Kept("already a non-blocking copy from pinned memory", KeepCategory.DELIBERATE)
        return Advice("`non_blocking=True` from pageable memory still waits for queued GPU work (a hidden "
                      "synchronisation): pin the source (`pin_memory=True`, `.pin_memory()`) to make the copy asynchronous",
                      HIDDEN_SYNC_BASIS)
    if _is_false(flag):
        return Kept("`non_blocking=False` is written out: a blocking copy is asked for, kept as written", KeepCategory.DELIBERATE)
    return Kept(f"`non_blocking={module.text(flag)}` is chosen at run time: kept as written", KeepCategory.DELIBERATE)


def _non_blocking_argument(call: cst.Call, method: str) -> cst.BaseExpression | None:
    keyword = keyword_arg(call, "non_blocking")
    if keyword is not None:
        return keyword.value
    positional = [arg.value for arg in call.args if arg.keyword is None]
    index = 1 if method == "cuda" else 2  # `.cuda(device, non_blocking)`, `.to(device, dtype, non_blocking)`
    return positional[index] if len(positional) > index else None


# -- the host data -------------------------------------------------------------------------------------


def _data_verdict(module: PythonModule, source: Source) -> tuple[Step, HostData | None] | Kept:
    """Is the data in host memory, and small enough for pinning to pay?"""
    if source.callee == "pin_memory":
        return Step(Tier.SAFE, "`.pin_memory()` is a pinned host buffer (it raises for anything else)"), None
    if source.callee == "torch.from_numpy":
        return Step(Tier.SAFE, "`torch.from_numpy` wraps a NumPy array: host memory"), HostData("a NumPy array", array=True)
    if source.callee in FILLED_FACTORIES:
        return Step(Tier.SAFE, f"`{source.callee}` without `device=` makes a CPU tensor, filled on the host here"), None
    if source.callee in LEGACY_TENSOR_TYPES or source.callee in CUDA_LEGACY_TENSOR_TYPES:
        kept = _legacy_data(module, source.call)
        if kept is not None:
            return kept
    data = data_argument(source.call)
    found = host_data(module, data, 0) if data is not None else None
    if found is None:
        spelled = module.text(data) if data is not None else "the data"
        return Step(Tier.VALIDATE, f"`{spelled}` is not provably host data: a tensor already on a device would make "
                                   "`pin_memory` raise"), None
    if found.large:
        size = f"`{found.runtime_length}`" if found.runtime_length else f"{found.length:,}"
        return Kept(f"a list of {size} elements ({found.evidence}): converting the list dominates, so pinning buys "
                    "nothing (65,536 elements take 9 ms either way)", KeepCategory.NO_GAIN)
    return Step(Tier.SAFE, f"the data is host memory: {found.evidence}"), found


def _legacy_data(module: PythonModule, call: cst.Call) -> Kept | None:
    """`torch.LongTensor(data)` copies host data only where `data` is provably a list or tuple, its one argument."""
    only = call.args[0] if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star else None
    if only is None or list_data(module, only.value) is None:
        return Kept(f"`{module.text(call)}` copies data only from a list or tuple, which its argument is not provably: "
                    "with an integer it makes an uninitialised tensor of that size, with a tensor it shares it",
                    KeepCategory.OTHER)
    return None


# -- the source after the copy ----------------------------------------------------------------------------


def _written_after_copy(module: PythonModule, site: Site) -> Kept | None:
    """A named source that is the copy's pinned buffer: written in place before the copy, only asked for metadata after.

    "After" is after the copy in the text, or anywhere in a loop that holds the copy but not the constructor
    (the next iteration writes what this one's copy may still be reading). A CPU factory must be written
    before the copy: otherwise its values need no host data, which is OPT102's business.
    """
    source = site.source
    name = source.name.value
    function = site.function.node
    copy_end = module.span(site.copy)[1]
    loop = _loop_around(module, site.copy, source.statement, function)
    written_before = False
    for use in site.function.uses(name):
        if use is source.name:
            continue
        line, code = module.start(use)[0], statement_text(module, use)
        if module.enclosing(use, SCOPE_NODES) is not function:
            return Kept(f"L{line}: `{name}` is captured by `{code}`, which may write it after the copy",
                        KeepCategory.SOURCE_WRITTEN)
        if _is_metadata_use(module, use) or isinstance(module.parent(use), cst.Del):
            continue
        after = module.span(use)[0] > copy_end or (loop is not None and _inside(module, use, loop))
        if after:
            return Kept(f"L{line}: `{code}` uses `{name}` after the copy is queued: a write there would race with the "
                        "copy", KeepCategory.SOURCE_WRITTEN)
        if not _is_in_place_write(module, use):
            return Kept(f"L{line}: `{code}` may keep a reference to `{name}` that is written after the copy",
                        KeepCategory.SOURCE_WRITTEN)
        written_before = True
    if source.callee in FILLED_FACTORIES and not written_before:
        return Kept(f"`{name}` is not filled on the host before the copy: create it on the device instead (OPT102)",
                    KeepCategory.NO_GAIN)
    return None


def _loop_around(module: PythonModule, node: cst.CSTNode, statement, function) -> cst.CSTNode | None:
    """The outermost loop in `function` that holds `node` but not `statement`."""
    found = None
    for ancestor in module.ancestors(node):
        if ancestor is function:
            break
        if isinstance(ancestor, LOOP_NODES) and not _inside(module, statement, ancestor):
            found = ancestor
    return found


def _inside(module: PythonModule, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    start, end = module.span(node)
    outer_start, outer_end = module.span(container)
    return outer_start <= start and end <= outer_end


def _is_metadata_use(module: PythonModule, use: cst.Name) -> bool:
    """`t.shape`, `t.size()`, `len(t)` and the like: no values read or written."""
    parent = module.parent(use)
    if isinstance(parent, cst.Attribute) and parent.value is use:
        attribute = parent.attr.value
        if attribute in _METADATA_ATTRIBUTES:
            return True
        grand = module.parent(parent)
        return attribute in _METADATA_METHODS and isinstance(grand, cst.Call) and grand.func is parent
    if isinstance(parent, cst.Arg):
        call = module.parent(parent)
        return (isinstance(call, cst.Call) and len(call.args) == 1
                and module.qualified_names(call.func) == {"builtins.len"})
    return False


def _is_in_place_write(module: PythonModule, use: cst.Name) -> bool:
    """`t[...] = v`, `t += v`, or `t.fill_(...)` / `t[...].copy_(...)` as a statement of its own."""
    node, parent = use, module.parent(use)
    if isinstance(parent, cst.Subscript) and parent.value is node:
        node, parent = parent, module.parent(parent)
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.AugAssign) and parent.target is node):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is node:
        method = parent.attr.value
        call = module.parent(parent)
        statement = module.parent(call) if isinstance(call, cst.Call) else None
        return (method.endswith("_") and not method.startswith("_") and isinstance(call, cst.Call)
                and call.func is parent and isinstance(statement, cst.Expr))
    return False


# -- the readers of the copy --------------------------------------------------------------------------------


def _consumer_verdict(module: PythonModule, site: Site, readers: "_Readers | None") -> Step | Kept:
    """Is the result read only in this function, on the stream that was current at the copy?"""
    function = site.function
    if function is None or readers is None:
        return Step(Tier.VALIDATE,
                    "at module or class level: the result is an attribute that any code may read on any stream")
    copy_stream = _stream_block(module, site.copy, function.node)
    if readers.discarded:
        return Kept("the result is never read: the blocking copy may be the point (a probe that waits for the GPU)",
                    KeepCategory.DISCARDED)
    copy_end = module.span(site.copy)[1]
    synchronised = []
    for use in readers.reads:
        block = _stream_block(module, use, function.node)
        if block is copy_stream:
            continue
        line = module.start(use)[0]
        where = f"inside `with {_with_items(module, block)}`" if block is not None else "outside the copy's stream block"
        sync = _synchronisation_between(module, function, copy_end, module.span(use)[0])
        if sync is None:
            return Kept(f"L{line}: `{statement_text(module, use)}` reads the result {where}, another stream, with no "
                        "wait for the copy's stream in between: it could read before the copy lands",
                        KeepCategory.OTHER_STREAM)
        synchronised.append(f"L{line} reads it on another stream after `{sync}`")
    if synchronised:
        return Step(Tier.VALIDATE, "; ".join(synchronised))
    switch = _stream_switch(function)
    if switch is not None:
        return Step(Tier.VALIDATE,
                    f"L{module.start(switch)[0]}: the function switches streams with `{module.text(switch.func)}`")
    if readers.escapes:
        return Step(Tier.VALIDATE, readers.escapes[0] + ": its readers' streams are unknown")
    return Step(Tier.SAFE, "the result is read only in this function, on the stream current at the copy")


class _Readers:
    """Where the copy's result flows in one function: through views and local names, to reads and escapes."""

    def __init__(self, module: PythonModule, function: Function):
        self.module = module
        self.function = function
        self.reads: list[cst.CSTNode] = []  # the places the result (or a view, or a name bound to it) is used
        self.escapes: list[str] = []  # why the result may be read outside this function
        self.discarded = False
        self.names: set[str] = set()  # the local names the result (or a view of it) is bound to
        self._steps = 0

    def follow(self, value: cst.BaseExpression, first: bool = True) -> None:
        self._steps += 1
        if self._steps > MAX_FLOW_STEPS:
            self.escapes.append(f"`{self.module.text(value)}`: followed too far")
            return
        top = self._outermost_alias(value)
        parent = self.module.parent(top)
        if isinstance(parent, cst.Expr):
            if first and top is value:
                self.discarded = True
            return
        target = self._bound_name(top, parent)
        if target is not None:
            self._follow_name(target)
            return
        escape = self._escape(top, parent)
        if escape is not None:
            self.escapes.append(f"L{self.module.start(top)[0]}: {escape}")
        elif isinstance(parent, cst.Arg) and self._kept_by_call(parent):
            self.follow(self.module.parent(parent), first=False)

    def _outermost_alias(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """Climb views of `node` (`.view(...)`, `[i]`, `.T`, `x if c else y`): whatever shares its memory."""
        module = self.module
        while True:
            parent = module.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node:
                grand = module.parent(parent)
                if isinstance(grand, cst.Call) and grand.func is parent and parent.attr.value in _ALIASING_METHODS:
                    node = grand
                elif not isinstance(grand, cst.Call) and parent.attr.value in _ALIASING_ATTRIBUTES:
                    node = parent
                else:
                    return node
            elif isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent
            elif isinstance(parent, cst.IfExp) and node is not parent.test:
                node = parent
            elif isinstance(parent, cst.BooleanOperation):
                node = parent
            elif isinstance(parent, cst.Arg) and self._aliasing_call(parent):
                node = module.parent(parent)
            else:
                return node

    def _aliasing_call(self, arg: cst.Arg) -> bool:
        call = self.module.parent(arg)
        return isinstance(call, cst.Call) and self.module.refers_to(call.func, _ALIASING_TORCH_FUNCTIONS) is not None

    def _bound_name(self, top: cst.BaseExpression, parent: cst.CSTNode | None) -> cst.Name | None:
        """The local name in `name = top`, `name: T = top`, `(name := top)` or `a, name = x, top`."""
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is top:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return targets[0] if len(targets) == 1 and isinstance(targets[0], cst.Name) else None
        if isinstance(parent, cst.NamedExpr) and parent.value is top:
            return parent.target if isinstance(parent.target, cst.Name) else None
        if isinstance(parent, cst.Element):
            display = self.module.parent(parent)
            assign = self.module.parent(display)
            if (isinstance(display, (cst.Tuple, cst.List)) and isinstance(assign, cst.Assign) and assign.value is display
                    and len(assign.targets) == 1 and isinstance(assign.targets[0].target, (cst.Tuple, cst.List))):
                targets = assign.targets[0].target.elements
                index = next(i for i, element in enumerate(display.elements) if element is parent)
                if len(targets) == len(display.elements) and not any(
                        isinstance(e, cst.StarredElement) for e in (*targets, *display.elements)):
                    target = targets[index].value
                    return target if isinstance(target, cst.Name) else None
        return None

    def _follow_name(self, target: cst.Name) -> None:
        name = target.value
        if name in self.names:
            return
        self.names.add(name)
        for use in self.function.uses(name):
            if self.module.enclosing(use, SCOPE_NODES) is not self.function.node:
                self.escapes.append(f"L{self.module.start(use)[0]}: `{name}` is captured by a nested function")
                continue
            self.reads.append(use)
            self.follow(use, first=False)

    def _escape(self, top: cst.BaseExpression, parent: cst.CSTNode | None) -> str | None:
        """Why the value at `top` leaves the function, or None when it is read here."""
        module = self.module
        if isinstance(parent, cst.Return):
            return "the result is returned"
        if isinstance(parent, (cst.Yield, cst.Lambda)):
            return "the result is yielded" if isinstance(parent, cst.Yield) else "the result is a lambda's value"
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is top:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return f"the result is stored in `{module.text(targets[0])}`"
        if isinstance(parent, (cst.Element, cst.DictElement, cst.StarredElement)):
            display = module.parent(parent)
            holder = module.parent(display)
            if isinstance(holder, cst.Arg) and self._torch_call(module.parent(holder)):
                return None  # `torch.cat([a, b])`: read at once
            return f"the result is put in `{shorten(module.text(display))}`"
        if isinstance(parent, cst.Arg):
            call = module.parent(parent)
            method = last_name(call.func) if isinstance(call, cst.Call) else ""
            if method in _STORING_METHODS:
                return f"the result is stored by `.{method}()`"
            if method[:1].isupper():
                return f"the result is passed to `{method}(...)`, which may keep it"
        return None

    def _kept_by_call(self, arg: cst.Arg) -> bool:
        """A call that is not torch's may return its argument: follow the call's result too."""
        call = self.module.parent(arg)
        return isinstance(call, cst.Call) and not self._torch_call(call)

    def _torch_call(self, call) -> bool:
        return isinstance(call, cst.Call) and torch_callee(self.module, call) is not None


def _host_wait_after(module: PythonModule, site: Site, readers: "_Readers | None") -> Kept | None:
    """A wait for the GPU on the host after the copy, in the same function, loop body and stream: the stall moves there.

    `torch.tensor([flag], device="cuda")`, an all-reduce, then `.item()` is the usual shape: the host waits for
    all queued work at `.item()` whatever the copy does, so making the copy asynchronous buys nothing. A wait is
    `.item()`, `.tolist()`, `.cpu()`, `.numpy()` or `synchronize()` on anything, or the result (or a name it is
    bound to) read as a Python value: formatted in an f-string, converted by `float()`, `int()`, `bool()`,
    `str()`, `print()`, or tested by `if`, `while`, `assert`.
    """
    if site.function is None or readers is None:
        return None
    function = site.function.node
    copy_end = module.span(site.copy)[1]
    stream, loop = _stream_block(module, site.copy, function), _innermost_loop(module, site.copy, function)
    for node in site.function.may_wait:
        if module.span(node)[1] <= copy_end:
            continue
        wait = _host_wait(module, node, readers.names)
        if wait is None or module.span(wait)[0] < copy_end or module.enclosing(wait, SCOPE_NODES) is not function:
            continue
        if _stream_block(module, wait, function) is stream and _innermost_loop(module, wait, function) is loop:
            return Kept(f"L{module.start(wait)[0]}: `{shorten(module.text(wait))}` waits for the GPU on the host in "
                        "this function anyway: the stall only moves there, nothing to gain", KeepCategory.NO_GAIN)
    return None


def _no_gain(module: PythonModule, site: Site) -> Kept | None:
    """A copy the host reads back in its own statement, or a tiny literal constant in a test: nothing to gain."""
    read = read_back_at_once(module, site.copy)
    if read is not None:
        return Kept(f"{read} in the same statement: the host waits for the GPU there anyway, so the stall only "
                    "moves; nothing to gain", KeepCategory.NO_GAIN)
    data = data_argument(site.source.call) if site.source.callee == "torch.tensor" else None
    elements = literal_elements(data) if data is not None and module.source.area is CodeArea.TESTS else None
    if elements is not None and elements <= TINY_TEST_CONSTANT:
        return Kept(f"a literal constant of {elements} number(s) in a test: a copy that small, made once per test, "
                    "gains nothing measurable", KeepCategory.NO_GAIN)
    return None


def _dead_store(module: PythonModule, site: Site) -> Advice | None:
    """Advice to delete a copy whose result is assigned again before any read."""
    rebound = rebound_before_read(module, site.copy)
    if rebound is None:
        return None
    return Advice(rebound.advice("the copy"), DEAD_STORE_BASIS, category=KeepCategory.DEAD_STORE)


def _host_wait(module: PythonModule, node: cst.CSTNode, names: set[str]) -> cst.CSTNode | None:
    """The part of `node` that makes the host wait for the GPU, if it does."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _HOST_WAITS:
        return node.func.attr
    if not names:
        return None
    if isinstance(node, cst.FormattedStringExpression) and _mentions_any(module, node.expression, names):
        return node.expression
    if isinstance(node, (cst.If, cst.While, cst.Assert)) and _mentions_any(module, node.test, names):
        return node.test
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _HOST_CONVERSIONS:
        if any(_mentions_any(module, arg.value, names) for arg in node.args) and \
                module.qualified_names(node.func) == {f"builtins.{node.func.value}"}:
            return node
    return None


def _mentions_any(module: PythonModule, node: cst.CSTNode, names: set[str]) -> bool:
    for found in walk(node):
        if isinstance(found, cst.Name) and found.value in names:
            parent = module.parent(found)
            if not (isinstance(parent, cst.Attribute) and parent.attr is found):
                return True
    return False


def _innermost_loop(module: PythonModule, node: cst.CSTNode, function: cst.FunctionDef) -> cst.CSTNode | None:
    for ancestor in module.ancestors(node):
        if ancestor is function:
            return None
        if isinstance(ancestor, LOOP_NODES):
            return ancestor
    return None


def _stream_block(module: PythonModule, node: cst.CSTNode, function: cst.FunctionDef) -> cst.With | None:
    """The innermost `with` in `function` whose body holds `node` and whose item makes another stream current."""
    child = node
    for ancestor in module.ancestors(node):
        if ancestor is function:
            return None
        if isinstance(ancestor, cst.With) and child is ancestor.body and any(_is_stream_item(i) for i in ancestor.items):
            return ancestor
        child = ancestor
    return None


def _is_stream_item(item: cst.WithItem) -> bool:
    return isinstance(item.item, cst.Call) and last_name(item.item.func) in _STREAM_CONTEXTS


def _with_items(module: PythonModule, block: cst.With) -> str:
    return ", ".join(module.text(item.item) for item in block.items)


def _synchronisation_between(module: PythonModule, function: Function, start: int, end: int) -> str | None:
    for call in function.calls:
        if last_name(call.func) in _SYNCHRONISATIONS and start <= module.span(call)[0] < end:
            return shorten(module.text(call))
    return None


def _stream_switch(function: Function) -> cst.Call | None:
    return next((call for call in function.calls if last_name(call.func) == "set_stream"), None)


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


# -- the edits ----------------------------------------------------------------------------------------------


def _rewrite(module: PythonModule, site: Site, proof: Proof, context: Context) -> Proven | Kept:
    """The fix of a copy every obligation holds for: its edits, what it buys, and the reason with each step."""
    edits = _edits(module, site)
    if isinstance(edits, Kept):
        return edits
    impact, basis = _impact(site, proof.data, context)
    start = min(module.span(site.anchor)[0], min(edit.start for edit in edits))
    end = max(module.span(site.copy)[1], max(edit.end for edit in edits))
    replacement = preview(module.source.text, start, end, edits)
    reason = f"{_describe(module, site)}; " + "; ".join(proof.steps)
    return Proven(reason, proof.tier, edits, impact, basis, replacement, proof.steps)


def _edits(module: PythonModule, site: Site) -> list[Edit] | Kept:
    """Pin the source and make the copy non-blocking: the one place this rule writes text.

    `pin_memory=True` and `non_blocking=True` are appended as the last
    argument of their call, laid out as the project's formatter would, as
    OPT102 appends `device=`; `.pin_memory()` follows the sharing constructor (chained) or
    the name (at the move); `torch.tensor(data, device=d)` has its `device=d`
    replaced by `pin_memory=True` and gains `.to(d, non_blocking=True)`.
    """
    source = site.source
    edits = []
    # Under black or ruff, laid out as they would (docs/formatting.md); otherwise appended where they go, the
    # statement's layout kept, and on a line of their own where they would pass the line limit.
    formatted = FormattedEdits(module)
    if site.move is None and source.callee in CUDA_LEGACY_TENSOR_TYPES:
        return _cuda_legacy_edits(module, site)
    if site.move is None:
        return _device_keyword_edits(module, site, formatted if module.style.formatter in _RESHAPING_FORMATTERS else None)
    if not source.pinned:
        if source.pinned_at_the_move:
            receiver = source.name if source.name is not None else source.call
            _, end = module.span(receiver)
            edits.append(Edit(end, end, ".pin_memory()"))
        elif source.call.lpar:
            return _IN_PARENTHESES
        else:
            formatted.insert_keyword(source.call, "pin_memory", "True")
    if site.copy.lpar:
        return _IN_PARENTHESES
    formatted.insert_keyword(site.copy, "non_blocking", "True")
    return _shaped(formatted.add(*edits))


def _shaped(formatted: FormattedEdits) -> list[Edit] | Kept:
    """The edits, or a keep where the formatter would lay the statement out again in a way optpatch does not know."""
    edits = formatted.edits()
    if formatted.unreproduced_break:
        return Kept(f"the edit passes the line limit of {formatted.module.style.formatter.value}, which lays this "
                    "statement out in a way optpatch does not reproduce (docs/formatting.md): kept rather than "
                    "written in a layout the formatter check would reject", KeepCategory.CANNOT_SPELL)
    return edits


_RESHAPING_FORMATTERS = frozenset({PythonFormatter.BLACK, PythonFormatter.RUFF})


def _device_keyword_edits(module: PythonModule, site: Site, formatted: FormattedEdits | None) -> list[Edit] | Kept:
    """`torch.tensor(data, device=d)` -> `torch.tensor(data, pin_memory=True).to(d, non_blocking=True)`, or
    `torch.tensor(data).pin_memory().to(d, non_blocking=True)` where the keyword cannot pin the data."""
    call, source = site.copy, site.source
    device = keyword_arg(call, "device")
    _, end = module.span(device.value)
    _, call_end = module.span(call)
    pin = "" if source.keyword_pins else ".pin_memory()"
    move = Edit(call_end, call_end, f"{pin}.to({module.text(device.value)}, non_blocking=True)")
    if source.keyword_pins and formatted is None:
        start, _ = module.span(device.keyword)
        return [Edit(start, end, "pin_memory=True"), move]
    index = next(i for i, arg in enumerate(call.args) if arg is device)
    if index == 0:
        return Kept("`device=` is the call's first argument: removing it would leave the call's layout to guess",
                    KeepCategory.CANNOT_SPELL)
    _, start = module.span(call.args[index - 1])
    removal = Edit(start, end, "")  # the argument, with the comma before it: the data comes first
    if formatted is None:
        return [removal, move]
    if source.keyword_pins:
        formatted.insert_keyword(call, "pin_memory", "True")
    return _shaped(formatted.add(removal, move))


def _cuda_legacy_edits(module: PythonModule, site: Site) -> list[Edit] | Kept:
    """`torch.cuda.LongTensor(ids)` -> `torch.LongTensor(ids).pin_memory().cuda(non_blocking=True)`: built on the
    host as before, pinned by a copy, copied to the current CUDA device."""
    call = site.copy
    func = call.func
    if call.lpar:
        return _IN_PARENTHESES
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and func.value.attr.value == "cuda"):
        return Kept(f"`{module.text(func)}` is not spelled `torch.cuda.<Type>`: the host type cannot be written from it",
                    KeepCategory.CANNOT_SPELL)
    _, end = module.span(call)
    return [module.replace(func, f"{module.text(func.value.value)}.{func.attr.value}"),
            Edit(end, end, ".pin_memory().cuda(non_blocking=True)")]


_IN_PARENTHESES = Kept("the call is in parentheses of its own: the edit would have to move them", KeepCategory.CANNOT_SPELL)


# -- what it buys ---------------------------------------------------------------------------------------------


def _impact(site: Site, data: HostData | None, context: Context) -> tuple[Impact, str]:
    if context is Context.ONCE:
        return Impact.LOW, ONCE_BASIS
    impact = Impact.HIGH if context is Context.HOT else Impact.MEDIUM
    if site.source.pinned:
        return impact, PINNED_BASIS
    if data is not None and data.array:
        return impact, ARRAY_BASIS
    return impact, LIST_BASIS if data is not None and data.length is not None else UNKNOWN_LENGTH_BASIS


def _describe(module: PythonModule, site: Site) -> str:
    """What the copy does now, and what the fix changes."""
    source = site.source
    constructor = "`x.pin_memory()`" if source.callee == "pin_memory" else f"`{source.callee}(...)`"
    if site.move is None and source.callee in CUDA_LEGACY_TENSOR_TYPES:
        return (f"{constructor} converts the list in pageable host memory and copies it to the current CUDA device, "
                "which waits for queued GPU work: build it on the host, pin it and copy with `non_blocking=True`")
    if site.move is None:
        return (f"{constructor} with `device=` converts the data in pageable host memory and copies it, which waits for "
                "queued GPU work: pin the data and copy with `non_blocking=True`")
    if source.name is not None:
        copy = (f"`{source.name.value}` = {constructor} (L{module.start(source.statement)[0]}) then "
                f"`{source.name.value}.{site.move.method}()`")
    else:
        copy = f"{constructor} then `.{site.move.method}()`"
    if source.pinned:
        return f"{copy}: a copy from pinned memory that still waits for queued GPU work: copy with `non_blocking=True`"
    return f"{copy}: a copy from pageable host memory, which waits for queued GPU work: pin it and copy with `non_blocking=True`"
