"""Headers this machine does not have, remembered per include set: a failed parse with headers is paid once.

A parse with headers that stops on a missing `#include` costs whatever it
parsed before it: seconds when torch's headers come first. Two things keep
that from repeating (docs/cpp-frontend.md, "Missing headers"):

- Before any parse with headers, the file's own unconditional includes,
  and the angle includes of the project headers it reaches through quoted
  ones, are asked of clang with `__has_include` in one tiny translation
  unit with the file's flags (`cpp_frontend.first_missing_include`): a few
  milliseconds, nothing parsed.
- A header clang misses deeper, inside a header the file includes
  (`ATen/cuda/CUDAContext.h` -> `cusparse.h`), is remembered here, in the
  user's cache, for that include set (the flags' digest): under the
  top-level include that led to it, with the headers the failed parse read.
  The probe of the next file with the same flags that includes it asks for
  the deep header too, so a file that would fail again costs milliseconds;
  once the header exists (or what the failed parse read changes) the memory
  no longer applies.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from optpatch.analysis_inputs import HeaderSetInput
from optpatch.user_cache import cache_dir


@dataclass(frozen=True)
class DeepMissing:
    """`via`, an include of the file, reaches `header`, which the include set lacks."""

    via: str
    header: str


def remembered(flags_digest: str) -> dict[str, DeepMissing]:
    """The deep missing headers of this include set, by the top-level include that reaches each, while what the
    failed parse read is unchanged."""
    found = {}
    for via, entry in _read(_path(flags_digest)).items():
        try:
            header, headers = entry["header"], entry["headers"]
        except (KeyError, TypeError):
            continue
        if HeaderSetInput(headers).unchanged():
            found[via] = DeepMissing(via, header)
    return found


def remember(flags_digest: str, missing: DeepMissing, headers: HeaderSetInput) -> None:
    path = _path(flags_digest)
    entries = _read(path)
    entries[missing.via] = {"header": missing.header, "headers": headers.digest}
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".missing-", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(entries, stream)
    os.replace(temporary, path)


def _path(flags_digest: str) -> Path:
    return cache_dir() / "headers" / f"missing-{flags_digest[:40]}.json"


def _read(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
