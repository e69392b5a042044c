"""The `dicetray` command line."""

from __future__ import annotations

import click

from scorekeeper import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dicetray")
def main() -> None:
    """dicetray: a camera reads the dice in the tray, a tablet shows the scores."""


if __name__ == "__main__":  # pragma: no cover
    main()
