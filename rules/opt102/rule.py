"""OPT102 create-on-device: a torch factory created on the host and moved at once is created on the device.

The class below is the rule: its docstring is the manual. Its steps sit
beside it: site.py (what a site is), forms.py (the chained and the
two-statement form), index.py (the index form), judge.py (the obligations
in order) with device.py, chain.py, factory.py, purpose.py and gain.py,
edits.py (the rewrite), impact.py (what it buys), reads.py;
examples.py holds the VALID and INVALID examples.
"""

from __future__ import annotations

import ast
from typing import Iterator

import libcst as cst

from optpatch.rule import Judgement, Rule
from optpatch.rule.python import CallIndex, PythonModule, called_functions
from optpatch.analysis.torch_values import move_method

from . import examples
from .forms import chained, two_statement
from .index import index_candidates, index_verdict
from .reads import FunctionReads
from .site import may_start_a_site


class CreateOnDevice(Rule):
    """
    Create tensors on their device (`torch.zeros(n, device=d)`) instead of on the host followed by `.to(d)`.

    ## What it does
    Finds a torch factory whose result is moved at once: `F(args).to(d)`,
    `F(args).to(device=d)`, `F(args).to(d, non_blocking=...)`,
    `F(args).cuda()`, `F(args).cuda(i)`, and the two-statement form
    `t = F(args)` followed by `t = t.to(d)` with no use of `t` in between,
    and rewrites it to `F(args, device=d)`. `F` is a real torch factory,
    resolved through imports: `zeros`, `ones`, `empty`, `full`, `eye`,
    `arange`, `linspace`, `logspace`, the `*_like` factories, the random
    factories; `tensor`, `as_tensor` and `from_numpy` get advice only (see
    below).

    Between the factory and the move may stand views, copies and dtype
    conversions: `torch.arange(n).view(-1, 1).repeat(1, k).to(d)` becomes
    `torch.arange(n, device=d).view(-1, 1).repeat(1, k)`, the chain kept.
    A factory created on the CPU on purpose and then moved,
    `torch.zeros(n, device="cpu").to(d)` (also `torch.device("cpu")`),
    gets its `device=` changed. `torch.zeros_like(x).to(d)` becomes
    `torch.zeros_like(x, device=d)`, whatever device `x` is on.

    `d` must be a device: a device string (`"cuda:0"`), an f-string,
    `torch.device(...)`, `x.device`, an integer index, a name whose every
    binding in scope is one of those or whose annotation says so
    (`torch.device`, `str`, `int`, their `Optional`/`Union`), or a call of a
    plain function of this file whose return annotation says so or whose
    every `return` gives one of those on a body that cannot end without one
    (`get_current_device()` returning `torch.device("cuda", rank)`). The
    proof states which; where only a name says it (a parameter `device`,
    any `.device` attribute), it says so. `.cuda()`
    becomes `device="cuda"` (the current CUDA device, as `.cuda()` means),
    `.cuda(0)` becomes `device="cuda:0"`, `.cuda(i)` for an integer
    expression `device=f"cuda:{i}"`. `.to(d, dtype)` merges the dtype too
    (`device=d, dtype=dtype`) when the conversion is exact.

    A dtype conversion in the chain may be spelled `.type(torch.float16)`
    (as `.to(torch.float16)`) or with a legacy CPU type,
    `.type(torch.IntTensor)`, which converts and also moves to the CPU: on
    the device it is written as its dtype, `.type(torch.int32)`, or, alone
    after a factory whose values are 0 or 1, as the factory's `dtype=`:
    `torch.zeros(b, n).type(torch.IntTensor).to(d)` becomes
    `torch.zeros(b, n, dtype=torch.int32, device=d)`. A `.type(...)` with
    no move after it is left alone: it puts the tensor on the CPU as asked.

    An index tensor built on the host for a tensor on a device,
    `idx = torch.arange(n)` read only as an index of one tensor `t`
    (`t[idx]`, `t[:, idx] = v`), is copied to `t`'s device at each use; it
    becomes `idx = torch.arange(n, device=t.device)`.

    Host data created for a device is examined in every spelling:
    `torch.tensor(data)`, `torch.as_tensor(data)`, `torch.from_numpy(a)` and
    the legacy constructors of a list (`torch.LongTensor(ids)`,
    `torch.FloatTensor(vals)`), each followed by a move; they get advice or
    are OPT103's (see below).

    Every factory-then-move site it examines is reported, kept ones with
    the reason (`-v`, the JSON report).

    ## Why is this bad
    `torch.arange(n).cuda()` computes the values on the CPU, then copies them
    to the GPU with a synchronous copy that first waits for every kernel
    already queued. `torch.arange(n, device="cuda")` launches one kernel and
    returns at once.

    ## Example
    ```python
    def positions(n, device: torch.device):
        return torch.arange(n).to(device)

    def rows(n, k, x):
        return torch.arange(n).view(-1, 1).repeat(1, k).view(-1).to(x.device)
    ```

    ## Use instead
    ```python
    def positions(n, device: torch.device):
        return torch.arange(n, device=device)

    def rows(n, k, x):
        return torch.arange(n, device=x.device).view(-1, 1).repeat(1, k).view(-1)
    ```

    ## Fix safety
    `safe` when every obligation holds: `F` is one of the factories above
    with no `device=` (or a `device=` that provably names the CPU), `out=`,
    `generator=`, `**kwargs` or `pin_memory=True`; the move target is
    provably a device (never `.to(dtype)`, `.to(other_tensor)`,
    `.to(memory_format=...)`, `.to(None)`); the values do not depend on the
    device that computes them (zeros, ones, empty, full, eye, `arange` with
    integer start and step, any `*_like` of them); a merged dtype is exact;
    and every method between the factory and the move gives the same result
    on every device. Those are the views and copies `view` (not
    `view(dtype)`), `reshape`, `repeat`, `unsqueeze`, `squeeze`, `flatten`,
    `permute`, `transpose`, `t`, `contiguous`, `clone`, `detach`, `expand`
    where it repeats no element (`expand(1, -1)`) or a copy follows it (the
    move copied the view into a tensor of its own, where the device form
    would return the view itself), and the dtype conversions (`.int()`, `.float()`, ..., `.to(dtype)`) that
    are exact: anything from 0/1-valued factories (zeros, ones, empty, eye,
    a fill of 0 or 1); integers to integers, which wrap the same way on every
    device; integers to a floating dtype where the factory's literals bound
    them within its exact integers (2048 for float16, 256 for bfloat16,
    2**24 for float32); a float to a wider float. The two-statement form also
    needs the statements between the two to leave `t`, the names in `d` and
    the current device alone (no calls in between). The index form needs
    `idx` bound once, by an `arange` of integer start and step without
    `device=`; every read of `idx` in the function, after it, an element of a
    subscript of the same local name `t`, whose other elements are slices, integers,
    `None` or `...`; every binding of `t` before `idx` is created and every
    use after it; and `t` a tensor: a parameter annotated `torch.Tensor` or
    a torch factory's result.

    `validate`: the target is a device only by its name (a parameter called
    `device` with no annotation, `get_accelerator().device_name()`); an
    index tensor's `t` that nothing shows to be a tensor (`t.device` raises
    for a list, a tuple or a module), or that is an attribute
    (`self.table[idx]`: a call between may rebind it);
    `.cuda(x)` with an `x` that may not name a CUDA device (`.cuda(x)`
    raises there, `device=x` would not); `linspace`, whose device kernel was
    measured bit-identical on an H100 and an H200 but is not proven to be;
    an integer factory converted to a floating dtype where nothing bounds
    its values (`torch.arange(n).float()`: exact up to 2**24, and the H100
    rounded `arange(2**25, ...)` the same way as the CPU, but that is a
    measurement, not a proof); `empty`, `empty_like` and `empty_strided`
    unless a full write is chained on them (`torch.empty(n).to(d).fill_(v)`):
    their unset elements differ by place (a large host allocation starts as
    zeroed pages, a device one is recycled from the caching allocator), so a
    read before a full write sees other values (gpt-neox's
    `generation_logits`, returned with rows never written).

    `unsafe`: random factories (`rand`, `randn`, `randint`, `randperm`,
    `normal`, `*_like`) draw from the device's generator, so the numbers
    change; `logspace` and `arange` with a fractional start or step round
    differently on the device (measured on an H200: 964 of 1000 values of
    `logspace(-10, 10, 1000)` and 864 of 2702 of `arange(0.5, 1000, 0.37)`
    differ in the last bits); `requires_grad=True`, because
    `F(..., requires_grad=True).to(d)` is a non-leaf copy of a CPU leaf
    whereas `device=` makes the result itself the leaf that receives `.grad`.

    Advice, not a fix, where the rewrite gains nothing: a move to the device
    the factory already creates the tensor on (`F(..., device=d).to(d)`:
    the move can go), and a moved tensor assigned to a local that is
    assigned again before anything reads it (a dead store: delete the line).

    Kept, with the reason: a factory that already has a `device=` other than
    the CPU (never a second one); a legacy constructor whose argument is not
    provably a list or tuple (`torch.FloatTensor(n)` with an integer makes
    an uninitialised tensor of size n, `torch.LongTensor(t)` shares the
    tensor `t`); a legacy `.type(...)` whose type is not spelled
    `torch.<Type>` (its dtype cannot be written), a type string, a CUDA
    type (`.type(torch.cuda.FloatTensor)`, a move of its own), or a value
    that is not a dtype known exactly (`.type(self.dtype)`, which old code
    sets to a legacy type, CUDA ones included); an index
    tensor that indexes several tensors (they may be on different devices),
    is read before it is created (a loop's earlier pass), or indexes a `t`
    bound after it is created (an attribute the function assigns included)
    or on the CPU (nothing to gain); a call that is not a factory
    (`torch.cat(...).to(d)`); a method between the factory and the move that
    computes new values (`.sum()`, `.fill_(v)`), an `expand` that repeats
    elements with no copy after it, or a dtype conversion that
    is not exact (`torch.full(s, 0.1).half()`); a merged dtype that is not
    exact (`torch.full(s, 0.1).to(d, torch.float64)`: the float32 value
    widened is not the float64 value); `pin_memory=True` factories and
    `x.pin_memory().to(d, non_blocking=True)` (a pinned staging buffer for
    an asynchronous copy is deliberate, and `pin_memory=True` with a CUDA
    `device=` is an error). Two keeps are about what the statement is for:
    a moved tensor that is never read (`torch.zeros(2).cuda()` as a
    statement, `_ = ...`, a local nothing reads), where the blocking copy is
    the point (a probe that a wedged GPU fails) and nothing is gained; and a
    site inside a block that expects or swallows an exception
    (`pytest.raises`, `self.assertRaises*`, `assertWarns*`,
    `contextlib.suppress`, a `try` whose handler may catch what torch
    raises), where the rewrite could change which call raises and with what
    message (`.cuda(-1)` and `device="cuda:-1"` raise different errors).

    Advice, not a fix, where `device=` saves nothing measurable: a move to
    the CPU (`.to("cpu")` returns the tensor unchanged); `zeros_like(x)` moved
    to `x.device`; `torch.tensor(data)` / `torch.as_tensor(data)` moved to a
    device that is not provably CUDA, where the data starts in host memory
    and what helps is `pin_memory=True` on the host tensor and
    `.to(d, non_blocking=True)`; `torch.from_numpy(a).to(d)`, where
    `torch.as_tensor(a, device=d)` only saves a wrapper tensor (measured
    within noise). Where the device is provably CUDA and nothing stands
    between them, `tensor(...)`, `as_tensor(...)` and `from_numpy(...)`
    followed by the move are OPT103's (pinned-async-h2d): OPT102 keeps them,
    saying so, and writes no edit there.

    ## Known problems
    Names are resolved within one file and flow-insensitively: a name is a
    device only when every binding in its scope is one. Any `.device`
    attribute counts as a device (`self.device`, `args.device`): `.to()` and
    `device=` read a string, an index, a `torch.device` or None the same way.
    The default device is assumed to be the CPU and the default dtype
    float32 (`torch.set_default_device` and `torch.set_default_dtype` are
    not tracked); that affects whether a `*_like` rewrite saves anything,
    and which dtype a conversion in a chain starts from.

    Found on DeepSpeed and apex (34 and 38 rewrites, all read by hand):
    - `get_accelerator().device_name()` and `.current_device_name()`,
      DeepSpeed's usual device spellings, cannot be proven from one file:
      those sites are `validate`. `.to(int)` / `.to(bool)` are dtype
      conversions (Python scalar types), never devices; `.to(dtype)` with a
      parameter named `dtype` is read as a dtype.
    - A file that gets `torch` only through a star import
      (`deepspeed/runtime/zero/stage3.py`) has no resolvable factories: a
      false negative, never a wrong rewrite.
    - `torch.randn(...).half().cuda()` is kept: the values are real numbers,
      and converting them to float16 is not proven exact (it is correctly
      rounded on both devices, but the numbers differ anyway).
    - `nn.Module`s and `torch.Tensor(...)` (whose dtype follows the default
      tensor type) are not factories and are not reported; the legacy
      constructors of a list are host data (advice, or OPT103's).
    - A device returned by a function of another module
      (`from .utils import get_current_device`) is not followed: the site is
      kept. An index tensor read in any other way (`idx + 1`, passed to a
      call) is no index site and is not reported.
    - `device, dims = x.device, x.size(1)` is followed element by element;
      other unpacking (`device, dims = f()`) is not.
    - In the two-statement form, an exception raised between the two
      statements and caught in the same function would find `t` already on
      the device; statements with calls in between keep the site.
    - In a chain, `device=` is evaluated before the arguments of the methods
      between the factory and the move, and a `device=` that replaces
      `device="cpu"` before the factory's arguments after it: where both
      hold calls, the site is kept.
    - A rewrite that enables an OPT101 fix in the two-statement form
      (`t = torch.zeros(n)`; `t = t.to(d)`; `t.copy_(x)`) is seen by OPT101
      only on the next run; the chained form (`torch.zeros(n).cuda()`) gets
      both fixes at once.
    - A merged dtype (`.to(d, dtype)`) is exact for 0/1 factories (any
      dtype) and integer factories (to an equal or wider integer) only: a
      float factory computed in a wider type is not its value widened
      (`torch.full(s, 0.1).to(d, torch.float64)`).

    The edit is written the way the project's formatter would write it
    (docs/formatting.md): under black or ruff, the statement is laid out
    again as they lay it out, so `device=` joins a call kept exploded on a
    line of its own with a trailing comma, a line that would pass the limit
    is split, and a `.cuda()` literal takes the project's quotes. Where
    optpatch does not reproduce the formatter's layout of the statement (a
    lambda, nested conditional expressions or a tuple under ruff, a file the
    formatter would change anyway), the edit keeps the statement's own
    layout within the line limit; `--format-command` runs the formatter.

    ## Measured impact
    Host time per call on an H100 80GB HBM3 (torch 2.11, 2026-11-26,
    docs/benchmarks.md), built on the host and moved vs built on the
    device, idle: `zeros(1)` 17.0 -> 12.2 us, `zeros(1024)` 14.2 -> 8.4 us,
    `zeros(65536)` 57.7 -> 8.3 us, `zeros(1048576)` 520.5 -> 12.2 us
    (43x); `arange(1048576)` 850.7 -> 8.4 us (101x), `full` 843.3 -> 11.6
    us, `linspace` 609.3 -> 12.7 us, `eye(1024)` 483.2 -> 15.1 us, but
    `eye` at 1,024 elements or fewer gains nothing; `randn(1048576)` 6510
    -> 9.8 us. Chains: `arange(n).int()` 522.3 -> 21.2 us at 1,048,576
    elements and nothing at 1,024 (the device runs the conversion too).
    With 5 ms of GPU work queued, every host form waited for all of it
    (5.0-5.7 ms) and the device form returned in 7-100 us, at every size.
    The impact class follows the size where the call's literals give it:
    low up to 1,024 elements, medium up to 65,536, high beyond (and where
    the size is unknown); one-time creation (module level, `__init__`,
    set-up) is low, and so is a `*_like` whose template may already be on
    the device (then `.to()` was free). No gain: `zeros_like` of a template already on the
    device (12.1 vs 11.7 us), `from_numpy(a).cuda()` vs
    `as_tensor(a, device="cuda")` (381.5 vs 356.1 us for 1,048,576
    floats), `torch.tensor(list_of_1024).cuda()` vs `device="cuda"` (163.4
    vs 162.1 us; 5014 vs 5014 us with 5 ms queued), while
    `pin_memory=True` and `non_blocking=True` took that to 292 us.

    ## References
    - https://pytorch.org/docs/stable/tensor_attributes.html#torch.device
    - https://pytorch.org/docs/stable/generated/torch.Tensor.to.html
    - https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device
    - https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html
    """

    code = "OPT102"
    name = "create-on-device"
    summary = "torch.zeros(n).to(d) -> torch.zeros(n, device=d) where d is provably a device"
    language = "python"
    default_tier = "safe"
    tags = ("performance", "transfer")
    version = 5  # 5: set-up code keeps its class as the size; 3: `.type(...)` in chains, legacy constructors, devices from project functions, index tensors; 4: unset factories
    trigger_words = (".to(", ".cuda(", "arange(")
    profiled_ops = ("aten::to", "aten::_to_copy", "aten::copy_", "cudaMemcpy", "cudaMemcpyAsync")

    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files with a move `check` looks at (`needs`). Most files with `.to(` hold none
        (DeepSpeed 100 of 157, NeMo 269 of 426).
        """
        return bool(cls.needs(calls))

    @classmethod
    def needs(cls, calls: CallIndex) -> list[ast.AST]:
        """The moves of the forms `check` looks at: `<call>(...).to(...)` where the inner call is a
        torch function (through an import of torch) or `pin_memory()`; `F(...).op(...).to(...)`,
        a chain of method calls that starts from a torch call named like a factory (or imported by
        name from torch); and `t = t.to(...)` where `t` is assigned such a call before it in the same
        block, as `check` reads it (diffusers' pipelines reassign `latents = latents.to(dtype)` in many
        functions and branches of a module that creates `latents` in one). Nothing
        else: devices and dtypes come from the function, its parameters, enclosing functions and
        module-level statements, and the blocks around a site (`try`, `with`) from its function.
        """
        moves = []
        for move in calls.named("to", "cuda"):
            if not isinstance(move.func, ast.Attribute):
                continue
            receiver = move.func.value
            if isinstance(receiver, ast.Call):
                if may_start_a_site(calls, receiver):
                    moves.append(move)
            elif isinstance(receiver, ast.Name) and calls.assigned_to(move) == receiver.id:
                if any(_may_be_its_factory(calls, source, move) for source in calls.calls_assigned(receiver.id)):
                    moves.append(move)
        arguments = [a for move in moves for a in (*move.args, *(keyword.value for keyword in move.keywords))]
        return moves + called_functions(calls.tree, arguments) + index_candidates(calls)

    def check(self, module: PythonModule) -> Iterator[Judgement]:
        # One finding per factory. `module.calls()` gives the outermost call of a chain first, so the move at the
        # end of `F(...).to(torch.int32).to(d)` judges `F`, not the conversion inside it; and `t = t.to(d)` comes
        # after `t = F(...).to(torch.int32)`, whose conversion it judges again as part of the two-statement form.
        judged: dict[int, Judgement] = {}
        reads = FunctionReads(module)
        for call in module.calls():
            if move_method(call) is None:
                verdict = index_verdict(module, call, reads)
                if verdict is not None:
                    judged[id(call)] = Judgement(module.start(call), module.context(call), verdict)
                continue
            receiver = call.func.value
            if isinstance(receiver, cst.Call):
                found = chained(module, call, receiver, judged, reads)
            elif isinstance(receiver, cst.Name):
                found = two_statement(module, call, receiver, reads)
            else:
                found = None
            if found is not None:
                factory, verdict = found
                judged[id(factory)] = Judgement(module.start(factory), module.context(factory), verdict)
        yield from judged.values()


def _may_be_its_factory(calls: CallIndex, source: ast.Call, move: ast.Call) -> bool:
    """`t = source` may be what `two_statement` finds for `t = t.to(...)`: a site's start, assigned before the move
    in the same block (at module or class level, anywhere before it)."""
    if not may_start_a_site(calls, source) or source.lineno > move.lineno:
        return False
    function = calls.outermost_function(move)
    if calls.outermost_function(source) is not function:
        return False
    return function is None or calls.in_one_block(source, move, function)
