"""Proving rewrites by running code: two commands, named apart.

- `--validate CMD` (apply, check, bench): the user's tests, run on a copy
  of the tree under poisoned memory, first unchanged, then with the fixes;
  a fix that breaks them is backed out. `tests.py` is that run, from
  `commands.py` (one command in its own process group), `workspace.py`
  (the copy), `fix_choice.py` (which fixes a run holds), `fix_texts.py`
  (each file's text for a set of fixes) and `bisect.py` (which fix broke
  it); `render.py` prints its outcome.
- `optpatch validate`: the bundled CUDA KV-cache kernels, built and
  checked before and after optpatch's own rewrites. `kernels.py` is that
  check; `kernel_changes.py` says which kernels the rewrite left unchanged,
  `kernel_report.py` holds its report and `kernel_chart.py` draws it.

`Tier.VALIDATE` is the tier of fixes that only a passing `--validate` run
applies. Nothing here is imported at start-up.
"""
