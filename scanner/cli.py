"""`dicetray scan` and `dicetray watch`: the scanner on photos and on a camera or video."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Sequence

import click
import cv2

from scanner.frames import Roll
from scanner.reader import DICE_SETS, Scanner, load_scanner
from scanner.settle import SettleWatcher
from scanner.sources import SourceFailed, SourceUnavailable, open_source

log = logging.getLogger(__name__)

#: What `scan` reads of a folder it is given: the photos in it, by name.
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


@click.command("scan")
@click.argument("images", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--dice", "dice_set", type=click.Choice(DICE_SETS), default="any", show_default=True,
              help="Which dice are in the tray: faces are read only for tossup or tallyup.")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Calibration profile.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per image and line.")
def scan_command(images: tuple[Path, ...], dice_set: str, profile: Path | None, as_json: bool) -> None:
    """Read the dice in photos (files, or folders of photos)."""
    quiet_opencv()
    scanner = _scanner(dice_set, profile)
    failed = 0
    for path in photo_paths(images):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR) if path.is_file() else None
        if image is None:
            reason = ("not a readable image" if path.is_file() else "no photos in this folder" if path.is_dir()
                      else "no such file")
            click.echo(f"dicetray scan: {path}: {reason}; skipped", err=True)
            failed += 1
            continue
        start = time.perf_counter()
        dice = scanner.read(image)
        ms = (time.perf_counter() - start) * 1000
        if as_json:
            click.echo(json.dumps({"image": str(path), "ms": round(ms, 2), "dice": [d.to_json() for d in dice]}))
        else:
            faces = ", ".join(f"{d.die or 'die'} {d.face or ''}".strip() for d in dice) or "no dice"
            click.echo(f"{path}: {len(dice)} dice ({ms:.1f} ms): {faces}")
    if dice_set == "any" and not as_json:
        click.echo("dicetray scan: only found the dice; add --dice tossup or --dice tallyup to read their faces",
                   err=True)
    if failed:
        raise SystemExit(1)


def photo_paths(paths: Sequence[Path]) -> list[Path]:
    """`paths` with each folder replaced by the photos in it (PHOTO_SUFFIXES), sorted by name;
    a folder without any stays, to be reported."""
    result = []
    for path in paths:
        if path.is_dir():
            photos = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in PHOTO_SUFFIXES)
            result.extend(photos or [path])  # an empty folder is reported as such
        else:
            result.append(path)
    return result


def quiet_opencv() -> None:
    """Leave OpenCV's warnings on unreadable files out: our own message says it better.
    OpenCV 4.10 and older (the last built for numpy 1, Raspberry Pi OS Bookworm's) have no
    cv2.utils.logging, only cv2.setLogLevel."""
    logging_module = getattr(getattr(cv2, "utils", None), "logging", None)
    if logging_module is not None:
        logging_module.setLogLevel(logging_module.LOG_LEVEL_ERROR)
    elif hasattr(cv2, "setLogLevel"):
        cv2.setLogLevel(OPENCV_LOG_LEVEL_ERROR)


#: cv2.utils.logging.LOG_LEVEL_ERROR, which OpenCV 4.10 does not name.
OPENCV_LOG_LEVEL_ERROR = 2


@click.command("watch")
@click.argument("source")
@click.option("--dice", "dice_set", type=click.Choice(DICE_SETS), default="tossup", show_default=True)
@click.option("--fps", type=float, default=None, help="Frame rate of a photo folder (videos carry their own).")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON line per settled roll or tray change.")
def watch_command(source: str, dice_set: str, fps: float | None, profile: Path | None, as_json: bool) -> None:
    """Print one reading per settled roll from a camera, a video or a photo folder."""
    scanner = _scanner(dice_set, profile)
    try:
        frames = open_source(source, fps=fps)
        frames.open()
    except (SourceUnavailable, SourceFailed) as error:
        raise click.ClickException(str(error)) from error
    watcher = SettleWatcher(scanner.read, fps=frames.fps or 30.0)
    try:
        for frame in frames:
            for event in watcher.feed(frame):
                if as_json:
                    click.echo(json.dumps(event.to_json()))
                elif isinstance(event, Roll):
                    faces = ", ".join(str(d.face) for d in event.dice)
                    click.echo(f"frame {event.frame} ({event.t:.2f} s): {len(event.dice)} dice: {faces}")
                else:
                    click.echo(f"frame {event.frame} ({event.t:.2f} s): tray changed ({event.moved} moved)")
    except SourceFailed as error:
        raise click.ClickException(str(error)) from error
    finally:
        frames.close()


def _scanner(dice_set: str, profile: Path | None) -> Scanner:
    try:
        return load_scanner(dice_set, profile)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
