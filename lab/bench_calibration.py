"""`dicetray bench calibration`: what calibration wins back when the table's look changes.

Physical setup it stands for: the same tray and dice, but another evening: a lamp with a colour
cast and half the light (per-channel gains times 0.5, applied in code to the rendered photos),
optionally with a coloured room light on top (an additive cast that dividing by the white rims
cannot take out). The uncalibrated scanner reads the changed photos with the defaults; the
calibrated one with what the wizard's own functions (`calibration.steps`) learn from a few
changed-look photos whose dice are confirmed from their labels, as a user would confirm them.
Dimming a render in code keeps what its lamp clipped, where a real lamp at half the light would
not have clipped it: such a patch keeps the hue clipping gave it (an orange die looks yellow),
its pixels piled at 96-172 instead of 255. Uncalibrated, the Tally reader takes no pile so low
for clipping (scanner.tally_blobs.CLIP_LOWEST), and such a die may be named by its hue: tallyup-s08's
orange die (64 % of its top face clipped) is named yellow so. Calibrated, the light gains
brighten the picture back and the pile lies near the top again, where the reader finds it.

Two ways of calibrating are reported: from a few dev-split photos of other tables (the reader
parameters only, the test tables never seen), and per test table as the wizard does it on the
table itself (its empty tray and its first roll, then the table's other rolls are scored). The
wizard also measures the table's black level (stray light) on the empty tray and the creases
under its confirmed roll's dice, which the calibrated scanner takes off before reading (the
last row shows the wizard without that step), and on a dim table the light gains its first
roll's white rims ask for, by which it brightens the pictures after that.
Like the wizard's profile, the calibrated scanners keep the empty-tray photo, and drop readings
where the frame still looks like it.

The Tally Up test split is read in each light too: with the built-in look; with a look taught
(`calibrate teach`, the wizard's Tally step) from TALLY_TEACH_PHOTOS teach photos in the same
light, from other tables than the ones read (the test tables have too few rolls to show every
face), which is harder than teaching on the table itself; and per table as the wizard calibrates
it, the built-in look reading with the table's black level and light gains. The wizard measures
the gains on its Toss Up roll's white rims and the black level on that roll too; no Tally table
has one, so here both are measured on the table's first Tally roll (the white Up Die and prints
are its brightest surfaces, the creases under the dice its darkest).
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TextIO

import cv2
import numpy as np

from calibration.steps import black_level, confirmed_from_labels, find_tray, grow_tray, learn_tossup, light_gains
from calibration.teach import TeachResult, learn_tally_model
from lab.bench_scanner import bench_scanner
from scanner.evaluate import Scorecard
from scanner.labels import LabelledPhoto, photo_labels
from scanner.reader import Scanner, subtract_black_level

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Look:
    """A change of light applied to a photo: per-channel gains (B, G, R), brightness, added cast."""

    name: str
    gains: tuple[float, float, float] = (1.0, 1.0, 1.0)
    brightness: float = 1.0
    cast: tuple[float, float, float] = (0.0, 0.0, 0.0)  # added after the gains, 0-255 per channel (B, G, R)

    def apply(self, image: np.ndarray) -> np.ndarray:
        out = image.astype(np.float32) * (np.float32(self.gains) * self.brightness) + np.float32(self.cast)
        return np.clip(out + 0.5, 0, 255).astype(np.uint8)


LOOKS = (
    Look("unchanged"),
    Look("warm cast, half the light", gains=(0.75, 1.0, 1.35), brightness=0.5),
    Look("warm cast, half the light, bluish room light", gains=(0.75, 1.0, 1.35), brightness=0.5, cast=(30.0, 10.0, 0.0)),
)
#: Dev photos the parameters are learned from: the first with at least this many dice per dev table.
DEV_DICE = 8
DEV_TABLES = 4
#: The Tally look is taught from this many teach photos (issue 5: teaching may use at most 20).
TALLY_TEACH_PHOTOS = 20
#: The fixtures' folder of the differently looking Tally set (issue 5).
ALT_SET = "alt"


def _card(scanner: Scanner, photos: Sequence[tuple[LabelledPhoto, np.ndarray]]) -> Scorecard:
    card = Scorecard()
    for label, image in photos:
        card.add(label.image.name, label.dice, scanner.read(image))
    return card


def _line(card: Scorecard, identity: bool = False) -> str:
    s = card.summary()
    named = f"identity {s['identity_accuracy']:.3f}  " if identity else ""
    return (f"recall {s['detection_recall']:.3f}  precision {s['detection_precision']:.3f}  {named}"
            f"faces {s['face_accuracy']:.3f}  wrong-confident {s['wrong_confident_rate']:.4f}  ({s['labelled_dice']} dice)")


def _tables(photos: Sequence[tuple[LabelledPhoto, np.ndarray]]) -> list[tuple[str, list[tuple[LabelledPhoto, np.ndarray]]]]:
    """The photos per table (setup), in setup order; only tables with a roll left to score after
    the first one the wizard calibrates on."""
    by_table: dict[str, list[tuple[LabelledPhoto, np.ndarray]]] = {}
    for label, image in photos:
        by_table.setdefault(str(label.scene.get("setup")), []).append((label, image))
    return [(setup, table_photos) for setup, table_photos in sorted(by_table.items()) if len(table_photos) >= 2]


def _empty_tray(fixtures: Path, dice_set: str, setup: str, look: Look) -> np.ndarray | None:
    """The table's empty-tray photo in `look`'s light, if the fixtures hold one."""
    empty = cv2.imread(str(fixtures / dice_set / f"{setup}-empty.jpg"), cv2.IMREAD_COLOR)
    return look.apply(empty) if empty is not None else None


def _tally_section(fixtures: Path, look: Look, labels: Sequence[LabelledPhoto], originals: dict[Path, np.ndarray],
                   report: Callable[[str], None]) -> dict[str, float]:
    """The Tally Up test split in `look`'s light: the built-in look, one taught in that light
    (when the fixtures hold teach photos) and, per table, the wizard's black level and gains."""
    photos = [(label, look.apply(originals[label.image])) for label in labels]
    report(f"[{look.name}] Tally Up test split, {len(photos)} photos")
    plain = Scanner("tallyup")
    built_in = _card(plain, photos)
    report(f"  built-in look                     {_line(built_in, identity=True)}")
    shares = {"tally_built_in": built_in.summary()["read_right_of_all"]}
    try:
        result, used = teach_first_photos(fixtures / "tallyup-teach", look.apply)
    except ValueError as error:
        report(f"  not taught: {error}")
    else:
        taught = _card(Scanner("tallyup", tally=result.model), photos)
        report(f"  taught on {used} teach photos in this light (other tables):")
        report(f"                                    {_line(taught, identity=True)}")
        shares["tally_taught"] = taught.summary()["read_right_of_all"]
    plain_rest, wizard = Scorecard(), Scorecard()
    for setup, table_photos in _tables(photos):
        (_, first), rest = table_photos[0], table_photos[1:]
        calibrated = tally_table_scanner(_empty_tray(fixtures, "tallyup", setup, look), first)
        for card, reader in ((plain_rest, plain), (wizard, calibrated)):
            for label, image in rest:
                card.add(label.image.name, label.dice, reader.read(image))
    report("  per table as the wizard does it (empty tray + first roll; the other rolls scored):")
    report(f"    uncalibrated                    {_line(plain_rest, identity=True)}")
    report(f"    calibrated                      {_line(wizard, identity=True)}")
    shares["tally_table_uncalibrated"] = plain_rest.summary()["read_right_of_all"]
    shares["tally_table_calibrated"] = wizard.summary()["read_right_of_all"]
    return shares


def tally_table_scanner(empty: np.ndarray | None, first: np.ndarray) -> Scanner:
    """The Tally scanner a table's profile gives as the wizard makes it on the table: the black
    level measured on its empty tray (None: not taken) and its `first` roll, the light gains
    that roll asks for, the empty tray kept to drop readings that still look like it."""
    level = black_level(empty, [first]) if empty is not None else None
    return Scanner("tallyup", black_level=level, light_gains=light_gains([subtract_black_level(first, level)]),
                   empty_tray=empty)


def teach_first_photos(folder: Path, change: Callable[[np.ndarray], np.ndarray] = lambda image: image,
                       count: int | None = None) -> tuple[TeachResult, int]:
    """(what `calibrate teach` learns from the first `count` (by default TALLY_TEACH_PHOTOS)
    labelled photos of dice in `folder`, each changed by `change`; how many it was given).
    ValueError where it cannot."""
    teach = [label for label in photo_labels(folder) if label.dice][:count or TALLY_TEACH_PHOTOS]
    photos = [(label.image.name, change(cv2.imread(str(label.image), cv2.IMREAD_COLOR)), label.dice, label.scene)
              for label in teach]
    try:
        return learn_tally_model(photos), len(teach)
    except ValueError as error:
        raise ValueError(f"{len(teach)} photos of dice in {folder}: {error}") from error


def bench_taught_look(fixtures: Path, split: str | None, out: TextIO | None = None, perturbed: bool = False) -> dict | None:
    """Issue 5's second target, printed like `bench scanner`'s own: the differently looking Tally
    set (fixtures/alt: other shades, ink, font and star) read with the look `calibrate teach`
    learns from the first TALLY_TEACH_PHOTOS of its teach photos. None (and a line saying so)
    where the fixtures hold no such set."""
    out = out if out is not None else sys.stdout
    folder = fixtures / ALT_SET
    if not (folder / "tallyup-teach").is_dir():
        print(f"[tallyup, taught] no differently looking set in {folder}", file=out)
        return None
    try:
        result, used = teach_first_photos(folder / "tallyup-teach")
    except ValueError as error:
        print(f"[tallyup, taught] not taught: {error}", file=out)
        return None
    title = f"tallyup, {ALT_SET}/ look taught from {used} of its teach photos"
    return bench_scanner(split, ["tallyup"], folder, None, out, perturbed=perturbed,
                         scanner=Scanner("tallyup", tally=result.model), title=title).get("tallyup")


def _dev_calibration(fixtures: Path, look: Look) -> tuple[Scanner, str]:
    rolls, tables = [], set()
    for label in photo_labels(fixtures / "tossup", split="dev"):
        setup = label.scene.get("setup")
        if len(label.dice) < DEV_DICE or setup in tables or len(tables) >= DEV_TABLES:
            continue
        tables.add(setup)
        image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
        rolls.append((look.apply(image), confirmed_from_labels(label.dice)))
    learned = learn_tossup(rolls)
    # Other tables, other trays and camera heights: only the reader's parameters carry over.
    return Scanner("tossup", tossup=learned.params), f"{len(rolls)} dev photos ({', '.join(sorted(tables))})"


def _table_calibration(fixtures: Path, setup: str, photos: list[tuple[LabelledPhoto, np.ndarray]],
                       look: Look) -> tuple[Scanner, Scanner, list[tuple[LabelledPhoto, np.ndarray]]]:
    """The wizard on one table: its empty tray, its first roll confirmed; the rest is scored.

    Returns the calibrated scanner, the same calibration without the black-level step (to show
    what that step is worth), and the photos left to score.
    """
    empty = _empty_tray(fixtures, "tossup", setup, look)
    found = find_tray(empty) if empty is not None else None
    (first_label, first_image), rest = photos[0], photos[1:]
    confirmed = confirmed_from_labels(first_label.dice)
    tray = found.quad if found else None
    if tray is not None and confirmed:
        size = float(np.median([d.size for d in confirmed]))
        tray = grow_tray(tray, [d.center for d in confirmed], 0.6 * size)
    scanners = []
    for level in (black_level(empty, [first_image]) if empty is not None else None, None):
        # The wizard learns by reading as the profile's scanner will: the stray light taken off.
        learned = learn_tossup([(first_image, confirmed)], tray, level=level)
        # The profile keeps the empty-tray photo too: readings that still look like it are dropped.
        scanners.append(Scanner("tossup", tossup=learned.params, tray=tray, die_size=learned.die_size,
                                frame_size=learned.frame_size, black_level=level, empty_tray=empty,
                                light_gains=learned.gains))
    return scanners[0], scanners[1], rest


def run_calibration_bench(fixtures: Path, report: Callable[[str], None] = print,
                          looks: Sequence[Look] = LOOKS) -> dict[str, dict[str, float]]:
    """Prints, per look, test-split accuracy uncalibrated vs calibrated; returns the Toss Up
    recalls and the Tally Up shares of all dice read right."""
    start = time.perf_counter()
    labels = [label for label in photo_labels(fixtures / "tossup", split="test") if label.dice]
    originals = {label.image: cv2.imread(str(label.image), cv2.IMREAD_COLOR) for label in labels}
    tally_labels = [label for label in photo_labels(fixtures / "tallyup", split="test") if label.dice]
    originals.update((label.image, cv2.imread(str(label.image), cv2.IMREAD_COLOR)) for label in tally_labels)
    results: dict[str, dict[str, float]] = {}
    for look in looks:
        photos = [(label, look.apply(originals[label.image])) for label in labels]
        report(f"[{look.name}] Toss Up test split, {len(photos)} photos")
        uncalibrated = Scanner("tossup")
        plain = _card(uncalibrated, photos)
        report(f"  uncalibrated                      {_line(plain)}")
        scanner, source = _dev_calibration(fixtures, look)
        calibrated = _card(scanner, photos)
        report(f"  calibrated on {source}:")
        report(f"                                    {_line(calibrated)}")
        plain_rest, wizard, no_black = Scorecard(), Scorecard(), Scorecard()
        for setup, table_photos in _tables(photos):
            table_scanner, without, rest = _table_calibration(fixtures, setup, table_photos, look)
            for card, reader in ((plain_rest, uncalibrated), (wizard, table_scanner), (no_black, without)):
                for label, image in rest:
                    card.add(label.image.name, label.dice, reader.read(image))
        report("  per table as the wizard does it (empty tray + first roll; the other rolls scored):")
        report(f"    uncalibrated                    {_line(plain_rest)}")
        report(f"    calibrated                      {_line(wizard)}")
        report(f"    calibrated, no black level      {_line(no_black)}")
        results[look.name] = {
            "uncalibrated": plain.summary()["detection_recall"], "calibrated_dev": calibrated.summary()["detection_recall"],
            "table_uncalibrated": plain_rest.summary()["detection_recall"],
            "table_calibrated": wizard.summary()["detection_recall"],
            "table_no_black_level": no_black.summary()["detection_recall"],
        }
        if tally_labels:
            results[look.name].update(_tally_section(fixtures, look, tally_labels, originals, report))
    report(f"({time.perf_counter() - start:.0f} s)")
    return results


__all__ = ["LOOKS", "Look", "bench_taught_look", "run_calibration_bench", "teach_first_photos"]
