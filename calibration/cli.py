"""`dicetray calibrate teach` and `dicetray calibrate check`.

Physical setup assumed: the user has photographed their own Tally Up dice on their tray with
the dicetray camera and labelled the photos in the fixture schema (one JSON file per photo).
The `calibrate` group is registered on the main command in scorekeeper/cli.py.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from calibration.library import ProfileLibrary

log = logging.getLogger(__name__)


@click.group("calibrate")
def calibrate() -> None:
    """Teach dicetray your dice and tray, and check calibration profiles."""


@calibrate.command("teach")
@click.option("--dice", "dice_set", type=click.Choice(["tallyup"]), default="tallyup", show_default=True,
              help="Which dice set the photos show (Toss Up needs no teaching).")
@click.option("--labels", "folders", multiple=True, required=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder of labelled photos (repeatable).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Profile to write; an existing one keeps its other settings.")
@click.option("--split", default=None, help="Only photos of this split (and the teach split).")
def teach_command(dice_set: str, folders: tuple[Path, ...], out: Path, split: str | None) -> None:
    """Learn the look of your dice (colours, print) from labelled photos into a profile."""
    from calibration.teach import teach_folders

    result = teach_folders(list(folders), out, split=split, report=sys.stdout)
    if result is None:
        click.echo(f"dicetray calibrate teach: nothing written to {out}", err=True)
        sys.exit(1)
    if result.problems:
        click.echo(f"dicetray calibrate teach: {len(result.problems)} problem(s) above; the photos or dice they name "
                   "were left out", err=True)


_DATA_OPTION = click.option(
    "--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Data directory (default: $DICETRAY_DATA_DIR or ~/.local/share/dicetray).")


def _library(data_dir: Path | None) -> "ProfileLibrary":
    from calibration.library import ProfileLibrary
    from scorekeeper.paths import default_data_dir

    return ProfileLibrary(data_dir or default_data_dir())


@calibrate.command("check")
@click.argument("profile", type=click.Path(dir_okay=False, path_type=Path))
@_DATA_OPTION
def check_command(profile: Path, data_dir: Path | None) -> None:
    """Validate a calibration profile (a file, or the name of one in the data directory)."""
    from scanner.profile import ProfileError, load_profile

    if not profile.exists() and profile.suffix == "" and len(profile.parts) == 1:
        profile = _library(data_dir).folder / f"{profile}.json"
    try:
        loaded = load_profile(profile)
    except ProfileError as error:
        click.echo(f"{profile}: {error}", err=True)
        sys.exit(1)
    taught = "taught Tally look" if loaded.tallyup is not None else "built-in Tally look"
    light = ("; dim light: pictures brightened x" + "/".join(f"{g:.1f}" for g in loaded.light_gains)
             + " (blue/green/red)") if loaded.light_gains else ""
    click.echo(f"{profile}: OK ({loaded.name}; {taught}{light})")
    if loaded.tallyup is not None:
        from scanner.face_net import FaceNet

        if loaded.tallyup.code_net != FaceNet().fingerprint:
            why = "was taught before the face net" if not loaded.tallyup.codes else "holds another face net's codes"
            click.echo(f"note: its Tally look {why}, so Tally prints are read with templates only; teach the "
                       f"Tally Dice again (`dicetray calibrate teach` or the wizard's Tally step) to read them "
                       f"with the face net too")


@calibrate.command("build-default")
@click.option("--fixtures", type=click.Path(file_okay=False, path_type=Path), default=Path("fixtures"),
              show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path(__file__).resolve().parent.parent / "scanner" / "data" / "tally_default.json",
              show_default=True)
def build_default_command(fixtures: Path, out: Path) -> None:
    """Re-learn the built-in Tally look from the project's renders (dev split + teach set; face codes
    also from the facemore set)."""
    from calibration.teach import build_default

    if build_default(fixtures, out, report=sys.stdout) is None:
        sys.exit(1)


@calibrate.command("list")
@_DATA_OPTION
def list_command(data_dir: Path | None) -> None:
    """The profiles in the data directory; the active one is marked with *."""
    library = _library(data_dir)
    entries = library.entries()
    if not entries:
        click.echo(f"no profiles in {library.folder}: run the calibration wizard (Calibrate camera on the home page)")
        return
    for entry in entries:
        mark = "*" if entry.active else " "
        detail = f"problem: {entry.error}" if entry.error else (
            f"made {entry.created or '?'}; {'taught' if entry.taught_tally else 'built-in'} Tally look")
        click.echo(f"{mark} {entry.name:20s} {detail}")


@calibrate.command("use")
@click.argument("name")
@_DATA_OPTION
def use_command(name: str, data_dir: Path | None) -> None:
    """Make the profile NAME the active one (`dicetray serve` reads with it from its next start)."""
    from scanner.profile import ProfileError

    try:
        path = _library(data_dir).activate(name)
    except ProfileError as error:
        click.echo(f"dicetray calibrate use: {error}", err=True)
        sys.exit(1)
    click.echo(f"active profile: {name} ({path})")
