"""A decode-step loop in the style of a serving engine, for `optpatch bench` (README.md)."""
