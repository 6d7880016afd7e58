"""`python -m optpatch.dev new-rule CODE NAME [--language cpp]`: the skeleton of a new rule (`make new-rule CODE=...
NAME=... [LANGUAGE=cpp]`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from optpatch.dev.scaffold import ScaffoldError, new_rule
from optpatch.model import Language


@click.group()
def main() -> None:
    """optpatch's developer tools."""


@main.command("new-rule")
@click.argument("code")
@click.argument("name")
@click.option("--language", type=click.Choice([language.value for language in Language]), default=Language.PYTHON.value,
              show_default=True,
              help="What the rule reads: Python (libcst) or C++/CUDA (libclang).")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="The optpatch checkout to add the rule to.")
def new_rule_command(code: str, name: str, language: str, root: Path) -> None:
    """Create rules/CODE/ (a working placeholder rule), its fixture and its docs page; then edit them."""
    try:
        created = new_rule(root, code, name, language)
    except ScaffoldError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    for path in created:
        click.echo(f"created {path.relative_to(root)}")
    click.echo("next: docs/architecture.md, \"A new rule\"; run `make test` (or pytest tests/test_fixtures.py "
               "tests/test_rule_examples.py) to see the placeholder pass, then make it yours")


if __name__ == "__main__":
    main()
