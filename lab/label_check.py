"""Do generated labels match what the images show? Each labelled top face, cut out of the photo
and squared, is compared with every face of that die as its family prints it: the labelled face
must look the most alike.

Colours are compared after dividing each channel by its mean over the face, so a camera's white
balance and exposure (a gain per channel) do not matter, while the print and the inset's colour
against the body do.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from fixtures.studio import families

SIDE = 32  # the squared face, pixels
#: Smaller faces are left unchecked: too few pixels to tell their prints apart (a Tally print,
#: a number in a circle, needs more than a Toss Up inset's colour or a die's pips).
MIN_SIDE_PX = {"tossup": 20.0, "d6": 20.0}
MIN_PRINT_SIDE_PX = 32.0
MIN_VISIBLE = 0.9
MAX_GLARE = 0.05


@dataclass
class Verdict:
    checked: int
    agree: int
    disagreements: list[str]

    @property
    def share(self) -> float:
        return self.agree / self.checked if self.checked else float("nan")


def _ring() -> np.ndarray:
    """The band just inside a face's edge: its body colour on every die (inset and print lie within)."""
    c = np.abs(np.arange(SIDE) + 0.5 - SIDE / 2) / (SIDE / 2)
    edge = np.maximum(c[:, None], c[None, :])
    return (edge > 0.78) & (edge < 0.9)


RING = _ring()


def _normalised(square: np.ndarray) -> np.ndarray:
    """The face divided by its body's colour, channel by channel (a gain per channel, white
    balance and exposure, cancels), blurred alike whatever its sharpness was, then made zero-mean
    and unit-length over all channels at once: the correlation of two such is blind to contrast
    (focus, JPEG) but not to where the print or inset is, nor to its colour against the body."""
    body = square / np.maximum(square[RING].mean(0), 1e-3)
    soft = cv2.GaussianBlur(body, (0, 0), 1.5).ravel()
    soft = soft - soft.mean()
    return soft / max(float(np.linalg.norm(soft)), 1e-6)


def _tile_squares(tiles: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Each face tile (linear RGB) at SIDE, blurred as a photo's face is, in its four turns."""
    out = []
    for tile in tiles:
        small = cv2.resize(cv2.GaussianBlur(tile, (0, 0), tile.shape[0] / SIDE * 0.6), (SIDE, SIDE),
                           interpolation=cv2.INTER_AREA)
        out.append([_normalised(np.rot90(small, k).copy()) for k in range(4)])
    return out


def face_square(image_bgr: np.ndarray, corners) -> np.ndarray:
    """The labelled top face cut out and squared (corners clockwise from the image's top-left),
    linear RGB in [0, 1]."""
    dst = np.float32([[0, 0], [SIDE, 0], [SIDE, SIDE], [0, SIDE]])
    m = cv2.getPerspectiveTransform(np.float32(corners), dst)
    square = cv2.warpPerspective(image_bgr, m, (SIDE, SIDE), flags=cv2.INTER_AREA)
    return np.power(square[..., ::-1].astype(np.float32) / 255.0, 2.2)


def best_face(square: np.ndarray, faces: list[str], turned: list[list[np.ndarray]]) -> str:
    seen = _normalised(square)
    distances = {}
    for label, turns in zip(faces, turned):
        d = min(1.0 - float(seen @ t) for t in turns)
        distances[label] = min(d, distances.get(label, np.inf))
    return min(distances, key=distances.get)


def _side(corners) -> float:
    pts = np.asarray(corners, float)
    return float(np.mean([np.linalg.norm(pts[i] - pts[(i + 1) % 4]) for i in range(4)]))


def check_photo(image_bgr: np.ndarray, label: dict, kinds: dict, name: str, verdict: Verdict,
                turned_cache: dict) -> None:
    """Adds the photo's checkable dice to the verdict. `kinds`: the family's dice (lab.composite)."""
    scene = label.get("scene", {})
    visible = scene.get("visible_fraction") or [1.0] * len(label["dice"])
    glare = scene.get("glare_fraction") or [0.0] * len(label["dice"])
    for i, die in enumerate(label["dice"]):
        least = MIN_SIDE_PX.get(die["die"], MIN_PRINT_SIDE_PX)
        if die["cocked"] or visible[i] < MIN_VISIBLE or glare[i] > MAX_GLARE or _side(die["corners"]) < least:
            continue
        kind = kinds[die["die"]]
        turned = turned_cache.setdefault(die["die"], _tile_squares(kind.tiles))
        read = best_face(face_square(image_bgr, die["corners"]), kind.faces, turned)
        verdict.checked += 1
        if read == die["face"]:
            verdict.agree += 1
        else:
            verdict.disagreements.append(f"{name} die {i}: labelled {die['die']} {die['face']}, looks like {read}")


def check_folder(folder: Path, verdict: Verdict | None = None) -> Verdict:
    """Every labelled photo of look families in a folder (family renders or composites)."""
    from lab.composite import family_kinds

    verdict = verdict or Verdict(0, 0, [])
    by_family: dict[str, tuple[dict, dict]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        label = json.loads(path.read_text())
        name = label["scene"]["family"]
        if name not in by_family:
            index = int(name[3:])
            by_family[name] = (family_kinds(families.draw_family(index),
                                            np.random.default_rng([families.FAMILY_SEED, index])), {})
        image = cv2.imread(str(path.with_name(label["image"])), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"cannot read {path.with_name(label['image'])}")
        kinds, cache = by_family[name]
        check_photo(image, label, kinds, path.stem, verdict, cache)
    return verdict
