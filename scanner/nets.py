"""Loading the shipped nets (die finder, face net, lean net, top-face locator) into OpenCV's dnn
module, and cutting the square crops about a die that the lean net and the locator look at."""

from __future__ import annotations

import logging
from typing import Sequence

import cv2
import numpy as np

log = logging.getLogger(__name__)


def read_onnx(model: bytes) -> cv2.dnn.Net:
    """An ONNX model (its bytes) as an OpenCV net on the classic engine, where OpenCV has one.

    OpenCV 5 picks its new graph engine by default; on these small nets, one thread, the classic
    one runs the die finder in 3.5 ms instead of 3.9 and a batch of six face codes in 1.5 ms
    instead of 2.1 (`dicetray bench scanner`), with the same face codes bit for bit and finder
    outputs within 2e-4."""
    buffer = np.frombuffer(model, np.uint8)
    engine = getattr(cv2.dnn, "ENGINE_CLASSIC", None)
    if engine is None:  # OpenCV 4 has only the one engine
        return cv2.dnn.readNetFromONNX(buffer)
    return cv2.dnn.readNetFromONNX(buffer, engine=engine)


def square_crop(image: np.ndarray, center: Sequence[float], half: float, side: int, first_pixel: float = 0.0) -> np.ndarray:
    """A `side` pixel square BGR crop of `image` reaching `half` pixels each way from `center`;
    outside the frame is mirrored. The crop's edge lies at `first_pixel` (-0.5: pixel i covers
    i-0.5 to i+0.5, so the centre lands between the middle two pixels)."""
    x, y = float(center[0]), float(center[1])
    source = np.float32([[x - half, y - half], [x + half, y - half], [x + half, y + half]])
    start, end = first_pixel, side + first_pixel
    target = np.float32([[start, start], [end, start], [end, end]])
    return cv2.warpAffine(image, cv2.getAffineTransform(source, target), (side, side),
                          flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


#: The percentile each crop is divided by (see over_bright_level).
BRIGHT_LEVEL = 99.0


def over_bright_level(crops: np.ndarray) -> np.ndarray:
    """N x 3 x H x W float32 of N x H x W x 3 crops, each over its own 99th percentile (plus
    one): the lamp's brightness drops out."""
    crops = np.asarray(crops)
    floats = crops.astype(np.float32, copy=False)
    if crops.dtype == np.uint8:
        reference = _upper_levels(crops).astype(np.float32)
    else:
        reference = np.percentile(floats.reshape(len(floats), -1), BRIGHT_LEVEL, axis=1)
    return (floats / (reference.reshape(-1, 1, 1, 1) + 1.0)).transpose(0, 3, 1, 2)


def _upper_levels(crops: np.ndarray) -> np.ndarray:
    """Per uint8 crop, its BRIGHT_LEVEL percentile as np.percentile gives it (linear, the same
    float32 number), read off its histogram: sorting ten crops' pixels cost 1.2-2 ms a Toss Up
    frame, the histograms 0.3."""
    flat = crops.reshape(len(crops), -1)
    position = (flat.shape[1] - 1) * BRIGHT_LEVEL / 100.0
    below = int(position)
    fraction = position - below
    levels = np.empty(len(crops), np.float64)
    for index, row in enumerate(flat):
        counts = np.cumsum(np.bincount(row, minlength=256))
        low = float(np.searchsorted(counts, below, side="right"))
        high = float(np.searchsorted(counts, below + 1, side="right"))
        # numpy's own interpolation between the two order statistics, from whichever lies nearer.
        levels[index] = high - (high - low) * (1.0 - fraction) if fraction >= 0.5 else low + (high - low) * fraction
    return levels
