"""Analyses that serve rules, not the pipeline: what a rule's proof rests on.

- `overwrite.py`: OPT101's proof that every element is written before it is read.
- `torch_values.py`: what a Python expression is as a device, dtype or integer (OPT102).
- `torch_api.py`: the torch functions the Python rules know by name, and their argument shapes.
- `no_gain.py`: edits that gain nothing (a dead store, a copy read back at once, a tiny literal in a test).

The engine never imports these; rules do.
"""
