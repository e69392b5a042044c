"""The unseen-look benchmark: the scanner on look families nothing learned or was tuned on, and
on real photos of ordinary dice (`dicetray bench scanner --split unseen`).

Test ground:
- `fixtures/families/`: full renders of the held-out families (`fixtures/families.json`), Toss Up
  and Tally rolls plus a few Tally teach photos each (Tally is read uncalibrated, and after
  teaching the family's look from its teach photos, as `calibrate teach` does);
- `fixtures/real/`: real photos of ordinary dice, their `validation` split.

A face that a person cannot read in the photo (its print blown white by the lamp, deep shade,
mostly covered, too few pixels) counts as right when read "unsure", as wrong when read as a face,
and is left out of `faces` (`unreadable`).
"""
from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence, TextIO

import cv2
import numpy as np

from scanner.evaluate import match, percentile
from scanner.frames import UNSURE, DieReading
from scanner.labels import BLOWN_OUT, LabelledDie, LabelledPhoto, load_photo_label

ECE_BINS = 10
#: A face's side below which a person cannot read it: a Tally print needs more pixels than the
#: colour of a Toss Up inset.
MIN_READABLE_SIDE = {"tossup": 8.0, "tallyup": 18.0}
#: Mostly hidden by the rim or another die.
MIN_READABLE_VISIBLE = 0.5
#: Mean brightness (0-255) of a top face below which it lies in too deep a shade to read.
DEEP_SHADE = 28.0
#: The real photos' labels box a die's whole outline; a reading whose centre lies in the box
#: (grown by this share of its size, for the die's top face is off its outline's centre) matches.
REAL_BOX_GROWTH = 0.1


def unreadable_cause(die: LabelledDie, index: int, scene: dict, image: np.ndarray, dice_set: str) -> str | None:
    """Why a person could not read this flat die's face in the photo, or None when they could."""
    glare = (scene.get("glare_fraction") or [])
    if index < len(glare) and glare[index] >= BLOWN_OUT:
        return "glare"
    visible = scene.get("visible_fraction") or []
    if index < len(visible) and visible[index] < MIN_READABLE_VISIBLE:
        return "covered"
    if die.size < MIN_READABLE_SIDE[dice_set]:
        return "small"
    mask = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(mask, np.round(np.array(die.corners)).astype(np.int32), 1)
    if mask.any() and float(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)[mask.astype(bool)].mean()) < DEEP_SHADE:
        return "shade"
    return None


@dataclass
class UnseenCard:
    """Counts over many photos; `figures` turns them into the benchmark's fractions."""

    labelled: int = 0
    found: int = 0
    matched: int = 0
    readable: int = 0  # matched flat dice whose face a person can read
    faces_right: int = 0
    unsure: int = 0
    identity_total: int = 0
    identity_right: int = 0
    flat_matched: int = 0
    wrong_scored: int = 0
    unreadable: int = 0
    unreadable_unsure: int = 0
    cocked_total: int = 0
    cocked_flagged: int = 0
    flat_flagged: int = 0
    causes: dict = field(default_factory=lambda: defaultdict(int))
    confidences: list = field(default_factory=list)  # (confidence, right) of every scored face
    ratios: list = field(default_factory=list)  # read time / one BGR->Lab conversion, per photo
    failures: list = field(default_factory=list)

    def add(self, name: str, photo: LabelledPhoto, image: np.ndarray, readings: Sequence[DieReading]) -> None:
        labels = photo.dice
        self.labelled += len(labels)
        self.found += len(readings)
        pairs = match(labels, readings)
        self.matched += len(pairs)
        for li, ri in pairs:
            label, reading = labels[li], readings[ri]
            if label.cocked:
                self.cocked_total += 1
                self.cocked_flagged += bool(reading.cocked)
                continue
            self.flat_matched += 1
            self.flat_flagged += bool(reading.cocked)
            scored = reading.face not in (None, UNSURE) and not reading.cocked
            right = reading.die == label.die and reading.face == label.face
            cause = unreadable_cause(label, li, photo.scene, image, photo.dice_set)
            if cause is not None:
                self.unreadable += 1
                self.causes[cause] += 1
                if scored:
                    self.wrong_scored += 1
                    self.failures.append(f"{name}: {label.die} {label.face} ({cause}, unreadable) read as "
                                         f"{reading.die} {reading.face}")
                else:
                    self.unreadable_unsure += 1
                continue
            self.readable += 1
            if label.die != "tossup":
                self.identity_total += 1
                self.identity_right += reading.die == label.die
            if scored:
                self.confidences.append((float(reading.confidence), right))
                if right:
                    self.faces_right += 1
                else:
                    self.wrong_scored += 1
                    self.failures.append(f"{name}: {label.die} {label.face} read as {reading.die} {reading.face} "
                                         f"at {reading.confidence:.2f}")
            else:
                self.unsure += 1

    @staticmethod
    def _rate(part: int, whole: int) -> float | None:
        return part / whole if whole else None

    def figures(self) -> dict:
        return {
            "dice": self.labelled,
            "recall": self._rate(self.matched, self.labelled),
            "precision": self._rate(self.matched, self.found),
            "identity": self._rate(self.identity_right, self.identity_total),
            "faces": self._rate(self.faces_right, self.readable),
            "unsure": self._rate(self.unsure, self.readable),
            "wrong_scored": self._rate(self.wrong_scored, self.flat_matched),
            "cocked_flagged": self._rate(self.cocked_flagged, self.cocked_total),
            "flat_flagged": self._rate(self.flat_flagged, self.flat_matched),
            "unreadable": self.unreadable,
            "ece": expected_calibration_error(self.confidences),
            "speed_lab_ratio": percentile(self.ratios, 0.5) if self.ratios else None,
        }


def reliability(confidences: Sequence[tuple[float, bool]], bins: int = ECE_BINS) -> list[tuple[float, float, int, float, float]]:
    """(low, high, count, mean confidence, share right) of each confidence bin holding readings."""
    rows = []
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [(c, r) for c, r in confidences if low <= c < high or (b == bins - 1 and c == 1.0)]
        if inside:
            rows.append((low, high, len(inside), float(np.mean([c for c, _ in inside])),
                         float(np.mean([r for _, r in inside]))))
    return rows


def expected_calibration_error(confidences: Sequence[tuple[float, bool]]) -> float | None:
    """The mean gap between confidence and the share read right, over bins, weighted by count."""
    if not confidences:
        return None
    total = len(confidences)
    return sum(count / total * abs(mean - share) for _, _, count, mean, share in reliability(confidences))


def lab_conversion_ms(image: np.ndarray, repeats: int = 3) -> float:
    """The reference operation: the fastest of a few BGR->Lab conversions of the same frame."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        cv2.cvtColor(image, cv2.COLOR_BGR2Lab)
        best = min(best, time.perf_counter() - start)
    return best * 1000


def read_timed(read: Callable[[np.ndarray], Sequence[DieReading]], image: np.ndarray) -> tuple[Sequence[DieReading], float]:
    start = time.perf_counter()
    readings = read(image)
    return readings, (time.perf_counter() - start) * 1000


def family_photos(folder: Path) -> dict[str, list[LabelledPhoto]]:
    """The held-out families' labelled photos in a folder, by family."""
    out: dict[str, list[LabelledPhoto]] = defaultdict(list)
    for path in sorted(folder.glob("*.json")):
        photo = load_photo_label(path)
        if photo.split == "unseen":
            out[photo.scene["family"]].append(photo)
    return dict(out)


def score_families(read_for: Callable[[str], Callable[[np.ndarray], Sequence[DieReading]] | None],
                   photos: dict[str, list[LabelledPhoto]]) -> tuple[UnseenCard, dict[str, UnseenCard]]:
    """Every family's photos read with read_for(family) (None: the family is skipped)."""
    whole, per_family = UnseenCard(), {}
    for family, labelled in sorted(photos.items()):
        read = read_for(family)
        if read is None:
            continue
        card = per_family.setdefault(family, UnseenCard())
        for photo in labelled:
            image = cv2.imread(str(photo.image), cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f"cannot read {photo.image}")
            readings, took = read_timed(read, image)
            ratio = took / max(lab_conversion_ms(image), 1e-3)
            for c in (card, whole):
                c.add(photo.image.name, photo, image, readings)
                c.ratios.append(ratio)
    return whole, per_family


# ----------------------------------------------------------------------------- real photos


@dataclass(frozen=True)
class RealDie:
    box: tuple[float, float, float, float]
    kind: str  # d6 or other (other dice are neither missed nor false when found)


#: Where the real photos may lie instead of beside their labels: data fetched from other
#: repositories is kept in the steering repository's shared/ folder, beside this checkout.
SHARED_REAL_PHOTOS = Path(__file__).resolve().parents[2] / "shared" / "real-photos"


def real_photos(root: Path, split: str = "validation", shared: Path = SHARED_REAL_PHOTOS
                ) -> list[tuple[Path, list[RealDie], str]]:
    """(photo, its dice, source) of each labelled real photo of the split: the photo beside its
    label, or else in `shared`/<source folder>/."""
    out = []
    for path in sorted(root.glob("*/*.json")):
        label = json.loads(path.read_text())
        if label.get("split") != split:
            continue
        dice = [RealDie(tuple(float(v) for v in d["box"]), d.get("die", "d6")) for d in label["dice"]]
        image = path.with_name(label["image"])
        if not image.exists() and (shared / path.parent.name / label["image"]).exists():
            image = shared / path.parent.name / label["image"]
        out.append((image, dice, label.get("source", path.parent.name)))
    return out


def match_boxes(dice: Sequence[RealDie], centres: Sequence[tuple[float, float]]) -> tuple[int, int, int]:
    """(d6 dice found, readings that are no die, readings on other dice): nearest box centre first."""
    pairs = []
    for di, die in enumerate(dice):
        x0, y0, x1, y1 = die.box
        gx, gy = (x1 - x0) * REAL_BOX_GROWTH, (y1 - y0) * REAL_BOX_GROWTH
        for ri, (x, y) in enumerate(centres):
            if x0 - gx <= x <= x1 + gx and y0 - gy <= y <= y1 + gy:
                pairs.append((math.dist((x, y), ((x0 + x1) / 2, (y0 + y1) / 2)), di, ri))
    used_d, used_r = set(), set()
    for _, di, ri in sorted(pairs):
        if di not in used_d and ri not in used_r:
            used_d.add(di)
            used_r.add(ri)
    found = sum(1 for di in used_d if dice[di].kind == "d6")
    on_other = sum(1 for di in used_d if dice[di].kind != "d6")
    return found, len(centres) - len(used_r), on_other


def score_real(read: Callable[[np.ndarray], Sequence[DieReading]], root: Path) -> dict:
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # dice, found, false, photos
    ratios, problems, absent = [], [], 0
    for image_path, dice, source in real_photos(root):
        if not image_path.exists():
            absent += 1  # neither staged here nor in shared/ (fixtures/README.md, "Real photos")
            continue
        image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
        if image is None:
            problems.append(f"cannot read {image_path}: skipped")
            continue
        readings, took = read_timed(read, image)
        ratios.append(took / max(lab_conversion_ms(image), 1e-3))
        found, false, _ = match_boxes(dice, [r.center for r in readings])
        row = per_source[source]
        row[0] += sum(d.kind == "d6" for d in dice)
        row[1] += found
        row[2] += false
        row[3] += 1
    dice = sum(r[0] for r in per_source.values())
    found = sum(r[1] for r in per_source.values())
    false = sum(r[2] for r in per_source.values())
    return {"dice": dice, "recall": found / dice if dice else None,
            "precision": found / (found + false) if found + false else None,
            "speed_lab_ratio": percentile(ratios, 0.5) if ratios else None,
            "per_source": {s: {"photos": r[3], "dice": r[0], "recall": r[1] / r[0] if r[0] else None,
                               "precision": r[1] / (r[1] + r[2]) if r[1] + r[2] else None}
                           for s, r in sorted(per_source.items())},
            "problems": problems + ([f"{absent} labelled photos are not on this machine (they are staged by hand: "
                                    "fixtures/README.md, 'Real photos')"] if absent else [])}


# ----------------------------------------------------------------------------- the report


def _pct(value: float | None) -> str:
    return "   n/a" if value is None else f"{value * 100:6.2f}"


def print_card(title: str, figures: dict, out: TextIO) -> None:
    ratio = figures.get("speed_lab_ratio")
    print(f"  {title:28s} dice {figures['dice']:4d}  recall {_pct(figures['recall'])}  precision "
          f"{_pct(figures['precision'])}  identity {_pct(figures['identity'])}  faces {_pct(figures['faces'])}  "
          f"unsure {_pct(figures['unsure'])}  wrong&scored {_pct(figures['wrong_scored'])}  cocked flagged "
          f"{_pct(figures['cocked_flagged'])}  flat flagged {_pct(figures['flat_flagged'])}  ece {_pct(figures['ece'])}"
          f"  unreadable {figures['unreadable']}  x Lab {'n/a' if ratio is None else f'{ratio:.1f}'}", file=out)


def report_set(title: str, whole: UnseenCard, per_family: dict[str, UnseenCard], out: TextIO,
               failures_shown: int = 12) -> dict:
    figures = whole.figures()
    print(f"[{title}] {len(per_family)} held-out families (figures in %; cost: median read / one BGR->Lab "
          "conversion of the same frame)", file=out)
    print_card("all", figures, out)
    for family, card in sorted(per_family.items()):
        print_card(family, card.figures(), out)
    if whole.causes:
        print("  unreadable faces by cause: " + ", ".join(f"{k} {v}" for k, v in sorted(whole.causes.items()))
              + f" ({whole.unreadable_unsure} of {whole.unreadable} read unsure)", file=out)
    rows = reliability(whole.confidences)
    if rows:
        print("  reliability (confidence bin: readings, mean confidence, share right):", file=out)
        for low, high, count, mean, share in rows:
            print(f"    {low:.1f}-{high:.1f}: {count:5d}  {mean:.3f}  {share:.3f}", file=out)
    for line in whole.failures[:failures_shown]:
        print(f"  - {line}", file=out)
    if len(whole.failures) > failures_shown:
        print(f"  ... and {len(whole.failures) - failures_shown} more", file=out)
    return figures


def run_unseen_bench(fixtures: Path, dice_sets: Sequence[str], out: TextIO, make_scanner, teach) -> dict:
    """Reads what is there and prints it; returns the figures of `--json`.
    `make_scanner(dice_set, tally_model=None)` -> a reader; `teach(photos)` -> a Tally model
    learned from labelled teach photos (calibrate teach's)."""
    from fixtures.studio import families

    cv2.setNumThreads(1)  # the cost target is for one core
    result: dict = {"looks_trained": len(families.families("learn")), "looks_unseen": len(families.families("unseen")),
                    "real_sources": [], "tossup": None, "tallyup": None, "real": None}
    root = fixtures / "families"
    if "tossup" in dice_sets:
        photos = family_photos(root / "tossup")
        if photos:
            scanner = make_scanner("tossup")
            whole, per = score_families(lambda _family: scanner.read, photos)
            result["tossup"] = report_set("tossup, unseen looks", whole, per, out)
        else:
            print(f"[tossup] no held-out family renders in {root / 'tossup'}", file=out)
    if "tallyup" in dice_sets:
        photos = family_photos(root / "tallyup")
        if photos:
            scanner = make_scanner("tallyup")
            whole, per = score_families(lambda _family: scanner.read, photos)
            plain = report_set("tallyup, unseen looks, uncalibrated", whole, per, out)
            teach_sets = family_photos(root / "tallyup-teach")

            def taught(family: str):
                labelled = teach_sets.get(family)
                if not labelled:
                    return None
                return make_scanner("tallyup", teach(labelled)).read

            whole, per = score_families(taught, photos)
            taught_figures = report_set("tallyup, unseen looks, taught from each family's teach photos", whole, per, out)
            result["tallyup"] = {**taught_figures, "uncalibrated": plain}
        else:
            print(f"[tallyup] no held-out family renders in {root / 'tallyup'}", file=out)
    real_root = fixtures / "real"
    real = score_real(make_scanner("any").read, real_root) if real_root.is_dir() and real_photos(real_root) else None
    if real is not None and real["dice"]:
        result["real_sources"] = sorted(real["per_source"])
        print(f"[real photos of ordinary dice] {real['dice']} dice: recall {_pct(real['recall'])}  precision "
              f"{_pct(real['precision'])}  x Lab {real['speed_lab_ratio'] or float('nan'):.1f}", file=out)
        for source, row in real["per_source"].items():
            print(f"  {source:28s} photos {row['photos']:3d}  dice {row['dice']:4d}  recall {_pct(row['recall'])}  "
                  f"precision {_pct(row['precision'])}", file=out)
        for problem in real["problems"]:
            print(f"  {problem}", file=out)
        result["real"] = {"recall": real["recall"], "precision": real["precision"], "faces": None, "identity": None,
                          "unsure": None, "wrong_scored": None, "ece": None, "speed_lab_ratio": real["speed_lab_ratio"],
                          "dice": real["dice"]}
    else:
        print(f"[real photos] none to read in {real_root}", file=out)
        for problem in (real or {}).get("problems", []):
            print(f"  {problem}", file=out)
    return result


def json_figures(result: dict) -> dict:
    """The `--json` object: the issue's keys, fractions or null."""
    keys = ("recall", "precision", "faces", "identity", "unsure", "wrong_scored", "ece", "speed_lab_ratio")

    def part(figures: dict | None) -> dict:
        return {k: (figures or {}).get(k) for k in keys}

    out = {"looks_trained": result["looks_trained"], "looks_unseen": result["looks_unseen"],
           "real_sources": result["real_sources"], "tossup": part(result["tossup"]), "tallyup": part(result["tallyup"]),
           "real": part(result["real"])}
    if result["tallyup"]:
        out["tallyup"]["uncalibrated"] = part(result["tallyup"]["uncalibrated"])
    return out
