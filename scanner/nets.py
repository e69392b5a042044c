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


def over_bright_level(crops: np.ndarray) -> np.ndarray:
    """N x 3 x H x W float32 of N x H x W x 3 crops, each over its own 99th percentile (plus
    one): the lamp's brightness drops out."""
    crops = np.asarray(crops, np.float32)
    reference = np.percentile(crops.reshape(len(crops), -1), 99, axis=1).reshape(-1, 1, 1, 1) + 1.0
    return (crops / reference).transpose(0, 3, 1, 2)
