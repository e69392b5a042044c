"""Reading labelled fixtures (the schema in fixtures/README.md) and the dev/test split."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

log = logging.getLogger(__name__)

#: A top face at least this share blown out by glare (scene.glare_fraction) shows no print.
BLOWN_OUT = 0.75


@dataclass(frozen=True)
class LabelledDie:
    die: str
    face: str
    center: tuple[float, float]
    corners: tuple[tuple[float, float], ...]
    cocked: bool

    @property
    def size(self) -> float:
        return mean_side(self.corners)


def mean_side(corners: Any) -> float:
    """The mean side length of a quadrilateral given by its four corners, in order."""
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = corners
    sides = [((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5,
             ((x3 - x2) ** 2 + (y3 - y2) ** 2) ** 0.5, ((x0 - x3) ** 2 + (y0 - y3) ** 2) ** 0.5]
    return float(sum(sides) / 4)


@dataclass(frozen=True)
class LabelledPhoto:
    image: Path
    dice_set: str
    dice: tuple[LabelledDie, ...]
    scene: dict[str, Any]

    @property
    def split(self) -> str | None:
        return self.scene.get("split")


def _die(raw: dict[str, Any]) -> LabelledDie:
    return LabelledDie(
        die=raw["die"], face=raw["face"], center=(float(raw["center"][0]), float(raw["center"][1])),
        corners=tuple((float(x), float(y)) for x, y in raw["corners"]), cocked=bool(raw.get("cocked", False)),
    )


def load_photo_label(path: Path) -> LabelledPhoto:
    raw = json.loads(Path(path).read_text())
    return LabelledPhoto(
        image=Path(path).with_name(raw["image"]), dice_set=raw["dice_set"],
        dice=tuple(_die(d) for d in raw["dice"]), scene=dict(raw.get("scene", {})),
    )


def photo_labels(folder: Path, split: str | None = None) -> Iterator[LabelledPhoto]:
    """Every labelled photo in a folder (sorted), optionally only one split."""
    for path in sorted(Path(folder).glob("*.json")):
        label = load_photo_label(path)
        if split is None or label.split == split:
            yield label


@dataclass(frozen=True)
class LabelledRoll:
    settled_frame: int
    dice: tuple[LabelledDie, ...]


@dataclass(frozen=True)
class LabelledVideo:
    video: Path
    fps: float
    dice_set: str
    rolls: tuple[LabelledRoll, ...]
    scene: dict[str, Any]


def load_video_label(path: Path) -> LabelledVideo:
    raw = json.loads(Path(path).read_text())
    return LabelledVideo(
        video=Path(path).with_name(raw["video"]), fps=float(raw["fps"]), dice_set=raw["dice_set"],
        rolls=tuple(LabelledRoll(int(r["settled_frame"]), tuple(_die(d) for d in r["dice"])) for r in raw["rolls"]),
        scene=dict(raw.get("scene", {})),
    )
