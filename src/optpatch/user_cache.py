"""Where optpatch keeps what it makes for the user between runs: never inside a scanned repository.

`$OPTPATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/optpatch`, else
`~/.cache/optpatch`. The result cache (cache.py), the precompiled headers
(cpp_pch.py), the precompiled prelude of the header-free parse
(cpp_frontend.py) and the manifests of header sets (analysis_inputs.py)
live in folders of it; deleting it is always safe.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    explicit = os.environ.get("OPTPATCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "optpatch"
