"""A small learned locator of a Tally die's top face: a convolutional net run through OpenCV's dnn.

Physical setup assumed: the Tally reader's (scanner/tally.py): a camera 30-50 cm above the tray,
tilted at most ~15 degrees, so a die lying flat shows its top face as a near square, with slivers
of its side faces, its shadow and often a neighbour beside it.

The reader finds a die's top face from its colour blob or the die finder's box, and that square
is often a few pixels off: it takes in a side face, the shadow or the rounded edges, or misses a
corner to glare. A face read on such a square stays unsure (the print is cut off or shares the
square with a side face's). The net looks again: a square crop about the square found
(`crop_about`, CROP_REACH of its sides each way, in the image's own orientation, balanced and
over its own bright level so the lamp drops out) and says where the top face's four corners lie,
in sides of the square found from its centre. Their order goes round the face clockwise; where
it starts is free (a top face has no first corner), which the reader does not need.

It is trained by `scanner/top_face_training.py` from the project's own fixtures (dev split,
teach set and lean set; never the test split or the alternative look, which measure it) and
shipped as `scanner/data/top_face.onnx`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from scanner.labels import mean_side
from scanner.nets import over_bright_level, read_onnx, square_crop

log = logging.getLogger(__name__)

DEFAULT_MODEL = Path(__file__).with_name("data") / "top_face.onnx"
#: Side of the crop the net sees, in pixels.
CROP_SIDE = 64
#: The crop reaches this many sides of the square found from its centre each way: room for a
#: top face whose square was found a third of a side off, or a fifth too small.
CROP_REACH = 1.25


def crop_about(image: np.ndarray, center: Sequence[float], side: float) -> np.ndarray:
    """A CROP_SIDE square BGR crop about `center`, CROP_REACH times `side` each way, in the
    image's orientation; outside the frame is mirrored."""
    # Pixel centres (edge at -0.5): the centre lands between the middle two pixels, so a crop
    # turned or mirrored keeps it there.
    return square_crop(image, center, CROP_REACH * max(float(side), 1.0), CROP_SIDE, first_pixel=-0.5)


def net_input(crops: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """N x 3 x CROP_SIDE x CROP_SIDE float32: each crop balanced by the frame's `gains` (per
    channel, tally_colour.balance_gains) and over its own 99th percentile (the lamp's brightness
    drops out)."""
    balanced = np.asarray(crops, np.float32) * np.asarray(gains, np.float32).reshape(-1, 1, 1, 3)
    return np.ascontiguousarray(over_bright_level(balanced), np.float32)


class TopFaceNet:
    """The shipped (or a given) top-face locator, loaded once; `locate` is safe from one thread at a time."""

    def __init__(self, model: Path = DEFAULT_MODEL) -> None:
        if not Path(model).is_file():
            raise FileNotFoundError(f"top-face net {model} is missing; train one with "
                                    f"`python -m scanner.top_face_training --out {model}` (see its docstring)")
        self._net = read_onnx(Path(model).read_bytes())

    def locate(self, image: np.ndarray, gains: np.ndarray, quads: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Where the net sees the top face about each square found (4 x 2 float32, image pixels,
        clockwise), in the order of `quads`."""
        if not len(quads):
            return []
        found = [np.float32(quad).reshape(4, 2) for quad in quads]
        centres = [quad.mean(axis=0) for quad in found]
        sides = [max(mean_side(quad), 1.0) for quad in found]
        crops = np.stack([crop_about(image, centre, side) for centre, side in zip(centres, sides)])
        self._net.setInput(net_input(crops, np.broadcast_to(np.float32(gains), (len(found), 3))))
        corners = self._net.forward().reshape(len(found), 4, 2)
        return [(c * side + centre).astype(np.float32) for c, side, centre in zip(corners, sides, centres)]
