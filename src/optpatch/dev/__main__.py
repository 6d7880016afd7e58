"""`python -m optpatch.dev new-rule CODE NAME`: the skeleton of a new rule (`make new-rule CODE=... NAME=...`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from optpatch.dev.scaffold import ScaffoldError, new_rule


@click.group()
def main() -> None:
    """optpatch's developer tools."""


@main.command("new-rule")
@click.argument("code")
@click.argument("name")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="The optpatch checkout to add the rule to.")
def new_rule_command(code: str, name: str, root: Path) -> None:
    """Create rules/CODE/ (a working placeholder rule), its fixture and its docs page; then edit them."""
    try:
        created = new_rule(root, code, name)
    except ScaffoldError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    for path in created:
        click.echo(f"created {path.relative_to(root)}")
    click.echo("next: docs/architecture.md, \"Adding a rule\"; run `make test` (or pytest tests/test_fixtures.py "
               "tests/test_rule_examples.py) to see the placeholder pass, then make it yours")


if __name__ == "__main__":
    main()
