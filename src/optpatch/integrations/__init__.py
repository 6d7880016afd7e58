"""optpatch in CI: the GitHub Action's logic (action.yml at the repository root calls `python -m optpatch.integrations.action`).

Everything here works from optpatch's machine outputs (the JSON report, the
markdown body, SARIF, the patch) and from the checked-out files; nothing
imports the engine's internals.
"""
