"""The rewrite: `ns::empty(sizes, dtype on the device)` and a `cudaMemcpyAsync` on the device's current stream,
where the site's placement says, and the `#include <ATen/cuda/CUDAContext.h>` the copy needs.
"""

from __future__ import annotations

import re

from optpatch.rule import Edit
from optpatch.rule.cpp import CppUnit, statement_lines

from .placement import Placement
from .site import Site


def rewrite(unit: CppUnit, site: Site) -> tuple[list[Edit], str]:
    """The edits of the rewrite (the allocation and the copy where `site.placement` says, the include) and
    the new code in one line, for people."""
    newline = unit.newline()
    options = (
        f"{site.namespace}::dtype({site.options}).device({site.device})"
        if site.options_form == "scalar_type" else f"{site.options}.device({site.device})"
    )
    allocation = f"{site.namespace}::empty({{{', '.join(site.sizes)}}}, {options})"
    stream = "at::cuda::getCurrentCUDAStream()" if site.device_is_type else f"at::cuda::getCurrentCUDAStream({site.device}.index())"

    def copy(result: str, indent: str) -> str:
        return (
            f"C10_CUDA_CHECK(cudaMemcpyAsync({result}.data_ptr(), {site.pointer}, {_byte_count(site)},{newline}"
            f"{indent}    cudaMemcpyHostToDevice, {stream}));"
        )

    if site.placement is Placement.DECLARATION:
        one_line = (f"C10_CUDA_CHECK(cudaMemcpyAsync({site.result.spelling}.data_ptr(), {site.pointer}, "
                    f"{_byte_count(site)}, cudaMemcpyHostToDevice, {stream}));")
        edit = _declaration_edit(unit, site, allocation, one_line)
        new_code = edit.text
        edits = [edit]
    elif site.placement is Placement.BEFORE_STATEMENT:
        local = _new_local_name(unit, site)
        indent = unit.indentation(site.statement.start)
        starts_line = not unit.text(unit.source.line_starts[unit.line_of(site.statement.start) - 1], site.statement.start).strip()
        gap = f"{newline}{indent}" if starts_line else " "
        new_code = f"auto {local} = {allocation};{gap}{copy(local, indent)}{gap}"
        edits = [Edit(site.statement.start, site.statement.start, new_code), Edit(site.expression.start, site.expression.end, local)]
    else:
        local = _new_local_name(unit, site)
        indent = unit.indentation(site.expression.start)
        body = f"{indent}    "
        new_code = (
            f"[&] {{{newline}{body}auto {local} = {allocation};{newline}{body}{copy(local, body)}{newline}"
            f"{body}return {local};{newline}{indent}  }}()"
        )
        edits = [Edit(site.expression.start, site.expression.end, new_code)]
    include = unit.include_edit("ATen/cuda/CUDAContext.h")
    if include is not None:
        edits.append(include)
    return edits, " ".join(new_code.split())


def _new_local_name(unit: CppUnit, site: Site) -> str:
    """A name for the device tensor that nothing in the file spells: `<buffer>_on_device`, numbered if taken."""
    taken = {token.spelling for token in unit.tokens if token.kind == "identifier"}
    base = f"{site.pointer_name}_on_device" if site.pointer_name else "table_on_device"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    return name


def _declaration_edit(unit: CppUnit, site: Site, allocation: str, copy: str) -> Edit:
    """The declaration with `allocation` for its value, then `copy`: within the project's clang-format limits,
    or, without a .clang-format, the copy broken once before `cudaMemcpyHostToDevice`."""
    text, newline, style = unit.source.text, unit.newline(), unit.style
    indent = unit.indentation(site.statement.start)
    declared = text[site.statement.start : site.from_blob.start]
    if not style.column_limit or "/" in declared:
        call, arguments = copy.split(" cudaMemcpyHostToDevice, ", 1)
        spelled = f"{call}{newline}{indent}    cudaMemcpyHostToDevice, {arguments}"
        return Edit(site.from_blob.start, site.statement.end, f"{allocation};{newline}{indent}{spelled}")
    line_end = text.find("\n", site.statement.end)
    trailing = text[site.statement.end : len(text) if line_end < 0 else line_end].rstrip("\r")
    declaration = statement_lines(" ".join(declared.split()) + " " + allocation + ";", indent, style, newline)
    copied = statement_lines(copy, indent, style, newline, trailing)
    return Edit(site.statement.start, site.statement.end, f"{declaration}{newline}{indent}{copied}")


def _byte_count(site: Site) -> str:
    """The sizes times the element size, multiplied in size_t from the start when there are several."""
    size = f"sizeof({site.element})"
    if len(site.sizes) == 1:
        return f"{_operand(site.sizes[0])} * {size}"
    return " * ".join([size] + [_operand(s) for s in site.sizes])


def _operand(text: str) -> str:
    plain = re.fullmatch(r"[\w.:\[\]]+(\(\s*\w*\s*\))?", text)
    return text if plain else f"({text})"
