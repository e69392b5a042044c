"""Checks on the rendered fixture library (fixtures/): label schema, decodable media, labelled
centres inside the frame, video roll timing, and Toss Up face colours matching the labels.

Runs in the project's venv (numpy + opencv-python-headless + pytest); never imports bpy.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures"
STILL_DIRS = {"tossup": "tossup", "tallyup": "tallyup", "tallyup-teach": "tallyup",
              # the second, differently looking Tally set (issue 5), in scenes of its own
              "alt/tallyup": "tallyup", "alt/tallyup-teach": "tallyup",
              # training pictures for the die finder's cocked output, in scenes of their own
              "lean/tossup": "tossup", "lean/tallyup": "tallyup"}
LEAN_DIRS = ("lean/tossup", "lean/tallyup")
VIDEO_DIR = "videos"

from scorekeeper.rules.dice import TALLY_FACES, UP_FACES

ALLOWED = {"tossup": {"tossup": {"green", "yellow", "red"}},
           "tallyup": {**{die: set(faces) for die, faces in TALLY_FACES.items()}, "up": set(UP_FACES)}}


def _labels(folder: str) -> list[Path]:
    d = FIX / folder
    return sorted(p for p in d.glob("*.json") if not p.name.startswith(".")) if d.is_dir() else []


STILL_LABELS = [p for f in STILL_DIRS for p in _labels(f)]
VIDEO_LABELS = _labels(VIDEO_DIR)


def _folder(p: Path) -> str:
    return p.parent.relative_to(FIX).as_posix()


def _id(p: Path) -> str:
    return f"{_folder(p)}/{p.stem}"


def _load(p: Path) -> dict:
    return json.loads(p.read_text())


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_die(d: dict, dice_set: str, where: str):
    assert isinstance(d, dict), where
    assert set(d) >= {"die", "face", "center", "corners", "cocked"}, f"{where}: keys {sorted(d)}"
    assert d["die"] in ALLOWED[dice_set], f"{where}: die {d['die']!r} not in {dice_set}"
    assert d["face"] in ALLOWED[dice_set][d["die"]], f"{where}: face {d['face']!r} impossible on {d['die']}"
    c = d["center"]
    assert isinstance(c, list) and len(c) == 2 and all(_num(v) for v in c), f"{where}: center {c!r}"
    k = d["corners"]
    assert isinstance(k, list) and len(k) == 4, f"{where}: need 4 corners"
    for pt in k:
        assert isinstance(pt, list) and len(pt) == 2 and all(_num(v) for v in pt), f"{where}: corner {pt!r}"
    assert isinstance(d["cocked"], bool), f"{where}: cocked must be a bool"
    # corners go clockwise in the image (y down) starting nearest the top-left, around the centre
    pts = np.array(k, float)
    area2 = sum(pts[i, 0] * pts[(i + 1) % 4, 1] - pts[(i + 1) % 4, 0] * pts[i, 1] for i in range(4))
    assert area2 > 0, f"{where}: corners not clockwise in image coordinates"
    d2 = (pts ** 2).sum(axis=1)
    assert d2[0] <= d2.min() + 1e-6, f"{where}: first corner is not the one nearest the top-left"
    assert cv2.pointPolygonTest(pts.astype(np.float32), tuple(map(float, c)), False) >= 0, \
        f"{where}: centre outside its corner polygon"


def test_still_libraries_not_empty():
    # The videos are rendered last; every labelled video present is checked by test_video.
    for folder in STILL_DIRS:
        assert _labels(folder), f"fixtures/{folder} has no labelled fixtures"


def test_no_orphan_media():
    for folder in list(STILL_DIRS) + [VIDEO_DIR]:
        d = FIX / folder
        if not d.is_dir():
            continue
        for m in list(d.glob("*.jpg")) + list(d.glob("*.mp4")):
            assert (d / f"{m.stem}.json").exists(), f"{m} has no label"


@pytest.mark.parametrize("path", STILL_LABELS, ids=_id)
def test_still(path: Path):
    lab = _load(path)
    assert lab["image"] == f"{path.stem}.jpg"
    assert lab["dice_set"] == STILL_DIRS[_folder(path)]
    assert isinstance(lab["dice"], list)
    assert isinstance(lab["scene"], dict)
    img = cv2.imread(str(path.parent / lab["image"]), cv2.IMREAD_COLOR)
    assert img is not None, "image does not decode"
    h, w = img.shape[:2]
    assert (w, h) == (1280, 720)
    for i, d in enumerate(lab["dice"]):
        _check_die(d, lab["dice_set"], f"{path.name} die {i}")
        x, y = d["center"]
        assert 0 <= x < w and 0 <= y < h, f"{path.name} die {i}: centre {d['center']} outside the frame"
    if path.stem.endswith("-empty"):
        assert lab["dice"] == []
    elif path.parent.name == "tossup":
        assert 1 <= len(lab["dice"]) <= 10
    elif path.parent.name == "tallyup":
        n_tally = sum(d["die"] != "up" for d in lab["dice"])
        assert 3 <= n_tally <= 6 and sum(d["die"] == "up" for d in lab["dice"]) <= 1
        assert len({d["die"] for d in lab["dice"]}) == len(lab["dice"]), "each Tally die exists once"


@pytest.mark.parametrize("path", VIDEO_LABELS, ids=_id)
def test_video(path: Path):
    lab = _load(path)
    assert lab["video"] == f"{path.stem}.mp4"
    assert lab["fps"] == 30
    assert lab["dice_set"] in ALLOWED
    cap = cv2.VideoCapture(str(path.parent / lab["video"]))
    assert cap.isOpened(), "video does not open"
    n, size = 0, None
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        size = frame.shape[:2]
        n += 1
    cap.release()
    assert n >= 90, f"only {n} frames"
    h, w = size
    assert w >= 640 and h >= 480
    last = -1
    assert len(lab["rolls"]) >= 1
    for r, roll in enumerate(lab["rolls"]):
        s = roll["settled_frame"]
        assert isinstance(s, int) and last < s < n, f"roll {r}: settled_frame {s} (previous {last}, {n} frames)"
        last = s
        assert roll["dice"], f"roll {r} has no dice"
        for i, d in enumerate(roll["dice"]):
            _check_die(d, lab["dice_set"], f"{path.name} roll {r} die {i}")
            x, y = d["center"]
            assert 0 <= x < w and 0 <= y < h


def test_splits_are_by_setup():
    sp = json.loads((FIX / "splits.json").read_text())["setups"]
    assert set(sp.values()) <= {"dev", "test", "teach"}
    for p in [p for p in STILL_LABELS if _folder(p) not in LEAN_DIRS] + VIDEO_LABELS:
        sc = _load(p)["scene"]
        assert sp[sc["setup"]] == sc["split"], f"{p.name}: split disagrees with splits.json"
    games = [s for s in sp if not s.startswith("teach")]
    dev = sum(sp[s] == "dev" for s in games)
    assert 0.5 <= dev / len(games) <= 0.7


@pytest.mark.parametrize("folder", LEAN_DIRS)
def test_the_lean_set_is_a_split_of_its_own_with_a_cocked_die_in_most_rolls(folder: str):
    labels = [_load(p) for p in _labels(folder)]
    assert len(labels) >= 20
    library = json.loads((FIX / "splits.json").read_text())["setups"]
    for lab in labels:
        scene = lab["scene"]
        assert scene["split"] == "lean" and scene["setup"].startswith("lean-"), lab["image"]
        assert scene["setup"] not in library
        # its own scenes: drawn from another base seed than any library setup
        assert scene["seed"][0] != json.loads(next((FIX / folder.split("/")[1]).glob("*.json")).read_text())["scene"]["seed"][0]
    leaning = sum(any(d["cocked"] for d in lab["dice"]) for lab in labels)
    assert leaning >= 0.8 * len(labels), f"{leaning} of {len(labels)} rolls have a cocked die"


@pytest.mark.parametrize("folder", ["tossup", "tallyup"])
def test_every_tray_surface_of_the_test_split_is_in_dev_too(folder: str):
    surfaces = {"dev": set(), "test": set()}
    for path in (FIX / folder).glob("*.json"):
        scene = _load(path)["scene"]
        surfaces[scene["split"]].add(scene["surface"])
    assert surfaces["test"] <= surfaces["dev"], surfaces


@pytest.mark.parametrize("folder", ["tallyup-teach", "alt/tallyup-teach"])
def test_teach_set_covers_every_face(folder: str):
    labels = _labels(folder)
    assert labels
    n = {}
    for p in labels:
        for d in _load(p)["dice"]:
            n[(d["die"], d["face"])] = n.get((d["die"], d["face"]), 0) + 1
    assert len(labels) >= 21, f"the teach set has {len(labels)} of its 21 photos"
    for die, faces in {**TALLY_FACES, "up": UP_FACES}.items():
        for f in set(faces):
            assert n.get((die, f), 0) >= 3, f"{die} {f} appears {n.get((die, f), 0)} times"


# ------------------------------------------------------------------ Toss Up colours

def classify_tossup(img: np.ndarray, die: dict) -> str | None:
    """Colour of the inset around the labelled centre, normalised by the die's own white rim."""
    pts = np.array(die["corners"], np.float32)
    c = np.array(die["center"], np.float32)
    side = float(np.mean([np.linalg.norm(pts[i] - pts[(i + 1) % 4]) for i in range(4)]))
    # white reference: the brightest pixels of the die's top face and its surroundings
    x0, y0 = np.maximum(0, (pts.min(0) - 0.1 * side).astype(int))
    x1, y1 = (pts.max(0) + 0.1 * side).astype(int)
    patch = img[y0:y1 + 1, x0:x1 + 1].reshape(-1, 3).astype(np.float32)
    lum = patch.sum(axis=1)
    white = patch[lum >= np.percentile(lum, 96)].mean(axis=0) + 1.0
    r = max(2, int(0.18 * side))
    cx, cy = int(round(c[0])), int(round(c[1]))
    core = img[max(0, cy - r):cy + r + 1, max(0, cx - r):cx + r + 1].reshape(-1, 3).astype(np.float32)
    bgr = np.median(core, axis=0) / white
    bgr = bgr / max(1e-6, bgr.max())
    hsv = cv2.cvtColor(np.uint8([[np.clip(bgr * 255, 0, 255)]]), cv2.COLOR_BGR2HSV)[0, 0]
    hue = float(hsv[0]) * 2.0
    sat = float(hsv[1]) / 255.0
    if sat < 0.25:
        return None
    if hue < 35 or hue >= 320:
        return "red"
    if hue < 80:
        return "yellow"
    if hue < 190:
        return "green"
    return None


TOSSUP_DICE = []
for _p in _labels("tossup"):
    _lab = _load(_p)
    _vis = _lab["scene"].get("visible_fraction", [])
    _glare = _lab["scene"].get("glare_fraction", [])
    for _i, _d in enumerate(_lab["dice"]):
        if _d["cocked"]:
            continue
        if _i < len(_vis) and _vis[_i] < 0.8:  # hidden behind the rim or another die
            continue
        if _i < len(_glare) and _glare[_i] > 0.08:  # a lamp mirrored in the glossy inset
            continue
        TOSSUP_DICE.append((_p, _i))


@pytest.mark.parametrize("path,i", TOSSUP_DICE, ids=lambda v: v.stem if isinstance(v, Path) else str(v))
def test_tossup_colour_matches_label(path: Path, i: int):
    lab = _load(path)
    img = cv2.imread(str(path.parent / lab["image"]), cv2.IMREAD_COLOR)
    die = lab["dice"][i]
    got = classify_tossup(img, die)
    assert got == die["face"], f"{path.name} die {i} at {die['center']}: labelled {die['face']}, pixels say {got}"


def test_tossup_colour_check_has_enough_dice():
    assert len(TOSSUP_DICE) >= 10 or not _labels("tossup"), "too few checkable Toss Up dice"
