"""The proof obligations of a site, and the tier they earn: `safe` when each is proven, `validate` when one is
only doubted, Kept when one is broken.

A `Site` (site.py) already holds a pageable buffer, sizes and a dtype that
can be spelled, and a device. Checked here, in this order: the host function
uses no other stream, device or pinned registration; the device is shown to
be CUDA (`cuda_device.py`); the build compiles the file with CUDA's headers;
every use of the result stays on the copy's stream (`streams.py`). The first
and the last can keep the site; any other unproven one is a doubt.
"""

from __future__ import annotations

from dataclasses import dataclass

from optpatch.rule import Kept, Tier
from optpatch.rule.cpp import CppUnit, Node

from .cuda_device import cuda_evidence
from .placement import Consumer, Placement
from .site import Site
from .streams import other_stream_use, result_uses, torch_op_taking


def obligations(unit: CppUnit, site: Site, function: Node) -> Kept | tuple[Tier, list[str]]:
    """The tier of the rewrite of `site` in the host function `function`, and its proof step by step (the doubts
    last); Kept at the first broken obligation."""
    other_stream = other_stream_use(unit, function)
    if other_stream is not None:
        return other_stream
    proof = [
        site.buffer + ": cudaMemcpyAsync stages it before returning",
        f"`{site.options}` -> {site.element}, {' x '.join(site.sizes)} element(s)",
    ]
    doubts = []
    cuda = cuda_evidence(unit, site, function)
    if cuda:
        proof.append(cuda)
    else:
        doubts.append(f"`{site.device}` is not shown to be a CUDA device before the copy (a CPU device would fail here)")
    built = _built_with_cuda(unit)
    (proof if built.known else doubts).append(built.evidence)
    if site.consumer is Consumer.LOCAL:
        uses = result_uses(unit, site, function)
        if isinstance(uses, Kept):
            return uses
        proof += uses[0]
        doubts += uses[1]
    elif site.consumer is Consumer.RETURNED:
        doubts.append("the copy is returned: its users may run on another stream")
    elif site.consumer is Consumer.MEMBER:
        doubts.append(f"the copy is stored in the member `{site.consumer_name}`: other methods may use it on another stream")
    elif torch_op_taking(unit, site.expression.start):
        proof.append(f"a torch op (`{site.consumer_name}`) takes the copy: it runs on the tensor's current stream")
    else:
        doubts.append(f"the copy is passed to `{site.consumer_name}`: its users may run on another stream")
    if site.placement is not Placement.DECLARATION:
        proof.append(f"the allocation and the copy go {site.placement.value}" + (
            "; nothing else in it touches the buffer" if site.placement is Placement.BEFORE_STATEMENT else ""
        ))
    proof += doubts
    return (Tier.VALIDATE if doubts else Tier.SAFE), proof


@dataclass(frozen=True)
class _CudaBuild:
    """Whether the build compiles the file with CUDA's headers (`known`), and what says so or what is missing."""

    known: bool
    evidence: str


def _built_with_cuda(unit: CppUnit) -> _CudaBuild:
    """A .cu file is compiled by nvcc, with CUDA's headers. Any other file may be a CPU-only extension's, where
    the rewrite's `ATen/cuda/CUDAContext.h` does not compile: only its build files can say otherwise."""
    if unit.source.path.suffix.lower() in (".cu", ".cuh"):
        return _CudaBuild(True, "a .cu file: nvcc compiles it with CUDA's headers")
    build = unit.cuda_build
    if build.known:
        return _CudaBuild(True, f"built with CUDA's headers: {build.evidence}")
    return _CudaBuild(False, f"not shown to be built with CUDA's headers ({build.evidence}): a CPU-only extension "
                             "could not include ATen/cuda/CUDAContext.h; `--validate` needs `--build` to check it")
