"""Tools for optpatch's own developers (not part of the user's CLI): `python -m optpatch.dev new-rule`."""
