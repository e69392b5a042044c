"""Real photographs of ordinary dice: their labels, box proposals, overlays to check them by eye.

The photos come from public repositories (see `fixtures/README.md`, "Real photos"); each photo
`fixtures/real/<source>/<name>.jpg` has a label file `<name>.json` beside it:

    {"image": "<name>.jpg", "dice_set": "any", "source": "<source>",
     "split": "validation" | "learn", "table": "<what the dice lie on>",
     "size": [width, height],
     "origin": {"repo": ..., "commit": ..., "path": ..., "original_size": [w, h], "scale": s},
     "dice": [{"die": "d6" | "other", "face": "1".."6" | null, "box": [x0, y0, x1, y1],
               "center": [x, y], "cocked": false}]}

`box` is the die's whole visible outline, `center` the centre of its top face, both in pixels of
the committed jpg (origin top-left). `face` is the number of pips on top, null where a person
cannot read it or the die has no pips (numeral dice); `other` marks a die that is not a d6 (it is
labelled so that finding it is not counted as a false detection). `size` lets the label checks
run where the photo itself is absent.

Making labels: `propose` suggests boxes with classical thresholding (a starting point only),
`edit` corrects them, `draw` writes the photo with its numbered boxes and enlarged crops to
`fixtures/_work/real-overlay/` to look at, `check` validates every label file:

    python -m lab.real_photos propose fixtures/real/SOURCE/NAME.jpg --table "wooden desk"
    python -m lab.real_photos edit fixtures/real/SOURCE/NAME.json --faces "3 5 1" --drop 4
    python -m lab.real_photos draw fixtures/real/SOURCE/NAME.json
    python -m lab.real_photos check
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

REAL_ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "real"
OVERLAY_ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "_work" / "real-overlay"
SOURCES_FILE = "sources.json"

SPLITS = ("validation", "learn")
DIE_KINDS = ("d6", "other")
FACES = ("1", "2", "3", "4", "5", "6")
MAX_LONG_SIDE = 1280
# How a die differs from its table, for proposals: lighter, darker, of another colour but not
# darker (ivory dice on white paper, whose shadows are tinted but darker), of another colour, or any.
POLARITIES = ("any", "bright", "dark", "lit", "colour")
# A photo with more dice than this, or a d6 smaller than this, cannot be labelled reliably.
MAX_D6_PER_PHOTO = 40
MIN_DIE_SIDE = 12
LABEL_KEYS = ("image", "dice_set", "source", "split", "table", "size", "dice")
DIE_KEYS = ("die", "face", "box", "center", "cocked")


@dataclass
class RealPhotosReport:
    """What `check_tree` found: problems (empty when all is well) and the counts."""

    problems: list[str] = field(default_factory=list)
    photos: Counter = field(default_factory=Counter)  # per split
    d6: Counter = field(default_factory=Counter)  # per split
    other: Counter = field(default_factory=Counter)  # per split
    tables: dict[str, set[str]] = field(default_factory=dict)  # split -> table kinds
    sources: dict[str, set[str]] = field(default_factory=dict)  # split -> source ids
    d6_by_source: Counter = field(default_factory=Counter)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)


def check_label(label: object, name: str, source: str | None = None) -> list[str]:
    """Problems with one label file's content (`name` is its file stem), without the photo."""
    if not isinstance(label, dict):
        return [f"{name}: not a JSON object"]
    problems = [f"{name}: missing key {key!r}" for key in LABEL_KEYS if key not in label]
    if problems:
        return problems
    if label["image"] != f"{name}.jpg":
        problems.append(f"{name}: image is {label['image']!r}, not {name + '.jpg'!r}")
    if source is not None and label["source"] != source:
        problems.append(f"{name}: source {label['source']!r} but it lies in folder {source!r}")
    if label["split"] not in SPLITS:
        problems.append(f"{name}: split {label['split']!r} is not one of {SPLITS}")
    if not isinstance(label["table"], str) or not label["table"].strip():
        problems.append(f"{name}: table must name what the dice lie on")
    size = label["size"]
    if not (isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)):
        return problems + [f"{name}: size must be [width, height] in pixels"]
    width, height = size
    if max(width, height) > MAX_LONG_SIDE:
        problems.append(f"{name}: {width}x{height} is larger than {MAX_LONG_SIDE} px on its long side")
    if not isinstance(label["dice"], list):
        return problems + [f"{name}: dice must be a list"]
    d6_count = 0
    for index, die in enumerate(label["dice"]):
        where = f"{name} die {index}"
        if not isinstance(die, dict) or any(key not in die for key in DIE_KEYS):
            problems.append(f"{where}: needs the keys {DIE_KEYS}")
            continue
        if die["die"] not in DIE_KINDS:
            problems.append(f"{where}: die {die['die']!r} is not one of {DIE_KINDS}")
        if die["face"] is not None and (die["die"] != "d6" or die["face"] not in FACES):
            problems.append(f"{where}: face {die['face']!r} (a d6's pips '1'..'6', else null)")
        if not isinstance(die["cocked"], bool):
            problems.append(f"{where}: cocked must be true or false")
        box, center = die["box"], die["center"]
        if not (isinstance(box, list) and len(box) == 4 and all(_is_number(v) for v in box)):
            problems.append(f"{where}: box must be [x0, y0, x1, y1]")
            continue
        x0, y0, x1, y1 = box
        if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height):
            problems.append(f"{where}: box {box} is not a box inside the {width}x{height} photo")
        if die["die"] == "d6":
            d6_count += 1
            if min(x1 - x0, y1 - y0) < MIN_DIE_SIDE:
                problems.append(f"{where}: a d6 of {x1 - x0:.0f}x{y1 - y0:.0f} px is too small to label")
        if not (isinstance(center, list) and len(center) == 2 and all(_is_number(v) for v in center)):
            problems.append(f"{where}: center must be [x, y]")
        elif not (x0 <= center[0] <= x1 and y0 <= center[1] <= y1):
            problems.append(f"{where}: center {center} lies outside its box {box}")
    if d6_count > MAX_D6_PER_PHOTO:
        problems.append(f"{name}: {d6_count} d6 dice are too many to label reliably")
    return problems


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header, or None where there is none."""
    if data[:2] != b"\xff\xd8":
        return None
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        length = int.from_bytes(data[at + 2:at + 4], "big")
        # Start-of-frame markers (baseline, progressive, ...), not DHT/JPG/DAC.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(data[at + 7:at + 9], "big"), int.from_bytes(data[at + 5:at + 7], "big")
        at += 2 + length
    return None


def check_photo(label: dict, photo: Path) -> list[str]:
    """Problems of a label with its photo, where the photo is there: it must decode (checked at
    an eighth of its size, which is quick) and have the size its label says."""
    data = photo.read_bytes()
    size = jpeg_size(data)
    preview = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_REDUCED_GRAYSCALE_8)
    if size is None or preview is None:
        return [f"{photo.name}: cannot be read as a JPEG photo"]
    if list(size) != label.get("size"):
        return [f"{photo.name}: is {size[0]}x{size[1]}, its label says {label.get('size')}"]
    return []


def check_tree(root: Path = REAL_ROOT, with_photos: bool = True) -> RealPhotosReport:
    """Check every label under `root` (one folder per source) and count dice per split.

    Each source lies in one split only (sources are split by collection, never by photo, so no
    scene is on both sides), and is described in `root/sources.json` with that split.
    """
    report = RealPhotosReport()
    sources_path = root / SOURCES_FILE
    try:
        sources = json.loads(sources_path.read_text())
    except (OSError, ValueError) as error:
        report.problems.append(f"{sources_path}: {error}")
        return report
    split_of_source: dict[str, set[str]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        described = sources.get(folder.name)
        if not isinstance(described, dict) or described.get("split") not in SPLITS:
            report.problems.append(f"{folder.name}: not described in {SOURCES_FILE} with its split")
        labels = sorted(folder.glob("*.json"))
        labels = [p for p in labels if not p.name.startswith("_")]
        if not labels:
            report.problems.append(f"{folder.name}: no label files")
        for path in labels:
            try:
                label = json.loads(path.read_text())
            except ValueError as error:
                report.problems.append(f"{path.name}: not JSON ({error})")
                continue
            problems = check_label(label, path.stem, folder.name)
            report.problems.extend(problems)
            if problems:
                continue
            split = label["split"]
            if isinstance(described, dict) and described.get("split") != split:
                report.problems.append(f"{path.stem}: split {split!r}, its source is {described.get('split')!r}")
            photo = path.with_suffix(".jpg")
            if with_photos and photo.exists():
                report.problems.extend(check_photo(label, photo))
            split_of_source.setdefault(folder.name, set()).add(split)
            kinds = Counter(die["die"] for die in label["dice"])
            report.photos[split] += 1
            report.d6[split] += kinds["d6"]
            report.other[split] += kinds["other"]
            report.d6_by_source[folder.name] += kinds["d6"]
            report.tables.setdefault(split, set()).add(label["table"].strip().lower())
            report.sources.setdefault(split, set()).add(folder.name)
    for source, splits in split_of_source.items():
        if len(splits) > 1:
            report.problems.append(f"{source}: photos in both splits {sorted(splits)}")
    return report


# --- proposals -----------------------------------------------------------------------------


def _distance(difference: np.ndarray, polarity: str) -> np.ndarray:
    """How far each pixel is from the table, given its Lab difference to it, for `polarity`."""
    if polarity == "bright":
        return np.clip(difference[..., 0], 0, None)
    if polarity == "dark":
        return np.clip(-difference[..., 0], 0, None)
    colour = np.linalg.norm(difference[..., 1:], axis=2)
    if polarity == "lit":
        # Shadows on white paper are tinted too, but darker than the paper: left out.
        return np.where(difference[..., 0] > -20, colour, 0)
    if polarity == "colour":
        return colour
    return np.linalg.norm(difference, axis=2)


def propose_boxes(image: np.ndarray, polarity: str = "any", min_side: int = MIN_DIE_SIDE) -> list[list[int]]:
    """Boxes of blobs that stand out from the photo's dominant surface: a starting point only.

    A die differs from the table in brightness or colour; the table is what most of the photo's
    border shows. `polarity` picks how (see `POLARITIES`): "bright" (lighter than the table, so
    shadows are left out), "dark", "lit", "colour" (hue and saturation only) or "any" (Lab
    distance). The difference is
    thresholded (Otsu), holes (pips) filled, and blobs of a die's shape (roughly square, solid)
    are kept.
    """
    lab = cv2.cvtColor(cv2.GaussianBlur(image, (5, 5), 0), cv2.COLOR_BGR2LAB).astype(np.float32)
    height, width = lab.shape[:2]
    band = max(4, min(height, width) // 20)
    border = np.concatenate([lab[:band].reshape(-1, 3), lab[-band:].reshape(-1, 3),
                             lab[:, :band].reshape(-1, 3), lab[:, -band:].reshape(-1, 3)])
    distance = _distance(lab - np.median(border, axis=0), polarity)
    scaled = np.clip(distance * (255.0 / max(float(distance.max()), 1.0)), 0, 255).astype(np.uint8)
    _, mask = cv2.threshold(scaled, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, kernel)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    # Pips are holes in a die's blob: fill them so a die stays one solid blob.
    mask = cv2.drawContours(np.zeros_like(mask), contours, -1, 255, cv2.FILLED)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (9, 9)))
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    boxes = []
    for contour in contours:
        x, y, w, h = cv2.boundingRect(contour)
        if min(w, h) < min_side or max(w, h) > 0.5 * max(height, width):
            continue
        if max(w, h) > 2.2 * min(w, h):
            continue
        hull_area = cv2.contourArea(cv2.convexHull(contour))
        if hull_area <= 0 or cv2.contourArea(contour) / hull_area < 0.7:
            continue
        boxes.append([x, y, x + w, y + h])
    return sorted(boxes, key=lambda b: (b[1] // max(1, (b[3] - b[1])), b[0]))


def fit_box(image: np.ndarray, box: list[float], polarity: str = "any") -> list[int]:
    """A rough box snapped to the blob around its centre: thresholded (Otsu) in a window 1.8 times
    the box against the window's rim, the blob under the box's centre, holes filled. The rough
    box is kept where no blob of a sensible size is found."""
    x0, y0, x1, y1 = box
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, 0.9 * max(x1 - x0, y1 - y0)
    height, width = image.shape[:2]
    wx0, wy0 = max(0, int(cx - half)), max(0, int(cy - half))
    wx1, wy1 = min(width, int(cx + half) + 1), min(height, int(cy + half) + 1)
    window = cv2.cvtColor(cv2.GaussianBlur(image[wy0:wy1, wx0:wx1], (3, 3), 0), cv2.COLOR_BGR2LAB)
    window = window.astype(np.float32)
    ring = np.concatenate([window[:3].reshape(-1, 3), window[-3:].reshape(-1, 3),
                           window[:, :3].reshape(-1, 3), window[:, -3:].reshape(-1, 3)])
    distance = _distance(window - np.median(ring, axis=0), polarity)
    scaled = np.clip(distance * (255.0 / max(float(distance.max()), 1.0)), 0, 255).astype(np.uint8)
    _, mask = cv2.threshold(scaled, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    mask = cv2.drawContours(np.zeros_like(mask), contours, -1, 255, cv2.FILLED)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))
    _, labels, stats, _ = cv2.connectedComponentsWithStats(mask)
    row, column = int(cy) - wy0, int(cx) - wx0
    inside = 0 <= row < mask.shape[0] and 0 <= column < mask.shape[1]
    centre = labels[row, column] if inside else 0
    if centre == 0:
        return [round(v) for v in box]
    bx, by, bw, bh, _ = stats[centre]
    side = max(x1 - x0, y1 - y0)
    if not (0.6 * side <= max(bw, bh) <= 1.5 * side):
        return [round(v) for v in box]
    return [wx0 + int(bx), wy0 + int(by), wx0 + int(bx + bw), wy0 + int(by + bh)]


def new_label(photo: Path, table: str, split: str, boxes: list[list[int]], origin: dict | None) -> dict:
    image = cv2.imread(str(photo))
    if image is None:
        raise ValueError(f"{photo}: cannot be read as an image")
    height, width = image.shape[:2]
    label = {"image": photo.name, "dice_set": "any", "source": photo.parent.name, "split": split,
             "table": table, "size": [width, height]}
    if origin:
        label["origin"] = origin
    label["dice"] = [_die(box) for box in boxes]
    return label


def _die(box: list[float], face: str | None = None, kind: str = "d6") -> dict:
    x0, y0, x1, y1 = (round(v) for v in box)
    return {"die": kind, "face": face, "box": [x0, y0, x1, y1],
            "center": [round((x0 + x1) / 2), round((y0 + y1) / 2)], "cocked": False}


# --- overlays ------------------------------------------------------------------------------

COLOURS = {"d6": (0, 220, 0), "other": (0, 160, 255)}


def draw(label: dict, image: np.ndarray, zoom: int = 110) -> np.ndarray:
    """The photo with every labelled die's box, index and face, and a strip of enlarged crops."""
    canvas = image.copy()
    scale = max(1, round(max(image.shape[:2]) / 900))
    for index, die in enumerate(label["dice"]):
        x0, y0, x1, y1 = (int(round(v)) for v in die["box"])
        colour = COLOURS.get(die["die"], (0, 0, 255))
        if die["cocked"]:
            colour = (255, 0, 255)
        cv2.rectangle(canvas, (x0, y0), (x1, y1), colour, scale)
        cx, cy = (int(round(v)) for v in die["center"])
        cv2.circle(canvas, (cx, cy), 2 * scale, (0, 0, 255), -1)
        text = f"{index}:{die['face'] if die['face'] else ('o' if die['die'] == 'other' else '?')}"
        cv2.putText(canvas, text, (x0, max(12, y0 - 3)), cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale,
                    (0, 0, 0), 3 * scale)
        cv2.putText(canvas, text, (x0, max(12, y0 - 3)), cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale,
                    (255, 255, 255), scale)
    crops = []
    for index, die in enumerate(label["dice"]):
        x0, y0, x1, y1 = (int(round(v)) for v in die["box"])
        pad = max(2, (x1 - x0) // 8)
        crop = image[max(0, y0 - pad):y1 + pad, max(0, x0 - pad):x1 + pad]
        if crop.size == 0:
            continue
        crop = cv2.resize(crop, (zoom, zoom), interpolation=cv2.INTER_CUBIC)
        cv2.putText(crop, f"{index}:{die['face'] or '?'}", (2, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.5,
                    (0, 0, 255), 2)
        crops.append(crop)
    if not crops:
        return canvas
    per_row = max(1, canvas.shape[1] // zoom)
    rows = []
    for start in range(0, len(crops), per_row):
        row = np.hstack(crops[start:start + per_row])
        rows.append(np.pad(row, ((0, 0), (0, canvas.shape[1] - row.shape[1]), (0, 0))))
    return np.vstack([canvas] + rows)


# --- command line --------------------------------------------------------------------------


def _box(text: str) -> list[float]:
    values = [float(v) for v in text.split(",")]
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"{text!r}: a box is x0,y0,x1,y1")
    return values


def _indexed(text: str) -> tuple[int, str]:
    index, _, value = text.partition("=")
    return int(index), value


def _edit(args: argparse.Namespace) -> None:
    path = Path(args.label)
    label = json.loads(path.read_text())
    dice = label["dice"]
    for index, value in args.box or []:
        dice[index].update(_die(_box(value), dice[index]["face"], dice[index]["die"]))
    for index, value in args.face or []:
        dice[index]["face"] = None if value in ("", "null", "?") else value
    if args.faces is not None:
        faces = args.faces.split()
        if len(faces) != len(dice):
            raise SystemExit(f"{len(faces)} faces for {len(dice)} dice")
        for die, face in zip(dice, faces):
            die["face"] = None if face in ("?", "-") else face
            if face == "o":
                die["die"], die["face"] = "other", None
    for text in args.add or []:
        box, _, face = text.partition(":")
        kind = "other" if face == "o" else "d6"
        dice.append(_die(_box(box), face if face not in ("", "?", "o") else None, kind))
    if args.fit is not None:
        image = cv2.imread(str(path.with_suffix(".jpg")))
        targets = range(len(dice)) if args.fit == [] else args.fit
        for index in targets:
            dice[index].update(_die(fit_box(image, dice[index]["box"], args.polarity), dice[index]["face"],
                                    dice[index]["die"]))
    for index, value in args.center or []:
        dice[index]["center"] = [round(float(v)) for v in value.split(",")]
    for index in args.other or []:
        dice[index]["die"], dice[index]["face"] = "other", None
    for index in args.cocked or []:
        dice[index]["cocked"] = True
    drop = set(args.drop or [])
    label["dice"] = [die for index, die in enumerate(dice) if index not in drop]
    if args.table:
        label["table"] = args.table
    path.write_text(json.dumps(label, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.real_photos", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    propose = commands.add_parser("propose", help="write a label file with proposed boxes")
    propose.add_argument("photos", nargs="+")
    propose.add_argument("--table", required=True)
    propose.add_argument("--split", choices=SPLITS, default="validation")
    propose.add_argument("--force", action="store_true", help="replace an existing label file")
    propose.add_argument("--polarity", choices=POLARITIES, default="any")
    propose.add_argument("--largest", type=int, help="keep only the N largest proposals")
    edit = commands.add_parser("edit", help="correct one label file")
    edit.add_argument("label")
    edit.add_argument("--faces", help="one face per die in order: 1-6, ? unreadable, o other die")
    edit.add_argument("--face", type=_indexed, action="append", help="INDEX=FACE")
    edit.add_argument("--box", type=_indexed, action="append", help="INDEX=x0,y0,x1,y1")
    edit.add_argument("--center", type=_indexed, action="append", help="INDEX=x,y")
    edit.add_argument("--add", action="append", help="x0,y0,x1,y1[:FACE|:o]")
    edit.add_argument("--drop", type=lambda t: [int(v) for v in t.split(",")], default=[])
    edit.add_argument("--other", type=lambda t: [int(v) for v in t.split(",")])
    edit.add_argument("--cocked", type=lambda t: [int(v) for v in t.split(",")])
    edit.add_argument("--table")
    edit.add_argument("--fit", nargs="?", const="", type=lambda t: [int(v) for v in t.split(",")] if t else [],
                      help="snap boxes (INDEX,INDEX or all) to the blob around their centre")
    edit.add_argument("--polarity", choices=POLARITIES, default="any")
    drawing = commands.add_parser("draw", help="write overlays to fixtures/_work/real-overlay/")
    drawing.add_argument("labels", nargs="+")
    check = commands.add_parser("check", help="validate every label file")
    check.add_argument("--root", default=str(REAL_ROOT))
    args = parser.parse_args(argv)

    if args.command == "propose":
        for photo in map(Path, args.photos):
            target = photo.with_suffix(".json")
            if target.exists() and not args.force:
                print(f"{target}: exists, left as it is (--force replaces it)")
                continue
            image = cv2.imread(str(photo))
            if image is None:
                print(f"{photo}: cannot be read as an image, skipped", file=sys.stderr)
                continue
            stage = photo.parent / "_stage.json"
            origin = json.loads(stage.read_text()).get(photo.stem) if stage.exists() else None
            boxes = propose_boxes(image, args.polarity)
            if args.largest:
                boxes = sorted(boxes, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]), reverse=True)[:args.largest]
            label = new_label(photo, args.table, args.split, boxes, origin)
            target.write_text(json.dumps(label, indent=1) + "\n")
            print(f"{target}: {len(label['dice'])} proposed boxes")
    elif args.command == "edit":
        args.drop = args.drop or []
        _edit(args)
    elif args.command == "draw":
        for path in map(Path, args.labels):
            label = json.loads(path.read_text())
            image = cv2.imread(str(path.with_suffix(".jpg")))
            if image is None:
                print(f"{path.with_suffix('.jpg')}: missing or unreadable, not drawn", file=sys.stderr)
                continue
            out = OVERLAY_ROOT / path.parent.name / f"{path.stem}.png"
            out.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(out), draw(label, image))
            print(out)
    else:
        report = check_tree(Path(args.root))
        for problem in report.problems:
            print(problem)
        for split in SPLITS:
            print(f"{split}: {report.photos[split]} photos, {report.d6[split]} d6 dice, "
                  f"{report.other[split]} other dice, tables {sorted(report.tables.get(split, ()))}, "
                  f"sources {sorted(report.sources.get(split, ()))}")
        return 1 if report.problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
