"""The bundled kernels live at the repository root (`kernels/`), next to
`src/`; make both importable whether or not the package is installed."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
for entry in (REPO_ROOT, REPO_ROOT / "src"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))
