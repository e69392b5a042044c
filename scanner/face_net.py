"""A small learned reader of Tally faces' prints: a convolutional net run through OpenCV's dnn.

Physical setup assumed: the Tally reader's (scanner/tally.py): a die's top face, found in a frame
from a camera 30-50 cm above the tray, warped to the canonical grid, and its print separated from
the body as an ink mask (`tally_prints.ink_of`: 0 body, 1 ink, whatever the colours).

The net turns such a mask into a short code, a unit vector: prints of the same face give codes
close together at any right-angle turn, a few pixels off-centre or a little too large or small
(the found top face is never exact), blurred or noisy. Which code is which face it does not
decide: teaching (calibration.teach) stores the mean code of each face's examples in the user's
own photos in the Tally model, so the net knows prints in general and the profile knows the
user's font. It is trained by `scanner/face_training.py` from the project's own fixtures (dev
split, teach set and lean set; never the test split or the alternative look, which measure it)
and shipped as `scanner/data/face_net.onnx`.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from scanner.nets import read_onnx

log = logging.getLogger(__name__)

DEFAULT_MODEL = Path(__file__).with_name("data") / "face_net.onnx"
#: Length of a face code.
CODE_SIZE = 32
#: What a square that misses the print is taught as (half a print and some tray, a neighbour's
#: edge): a code of its own, so that such a cut lies near no face's code.
NO_FACE = "no face"


class FaceNet:
    """The shipped (or a given) face net, loaded once; `codes` is safe from one thread at a time."""

    def __init__(self, model: Path = DEFAULT_MODEL) -> None:
        if not Path(model).is_file():
            raise FileNotFoundError(f"face net {model} is missing; train one with "
                                    f"`python -m scanner.face_training --out {model}` (see its docstring)")
        data = Path(model).read_bytes()
        self._net = read_onnx(data)
        self.model = Path(model)
        #: Names this net in the Tally models whose codes it made (see TallyModel.code_net).
        self.fingerprint = hashlib.sha256(data).hexdigest()[:12]

    def codes(self, inks: Sequence[np.ndarray]) -> np.ndarray:
        """Unit codes (N x CODE_SIZE) of canonical ink masks (each PATCH_SIDE square, 0-1)."""
        if not len(inks):
            return np.zeros((0, CODE_SIZE), np.float32)
        blob = np.ascontiguousarray(np.stack([np.asarray(ink, np.float32) for ink in inks])[:, None])
        self._net.setInput(blob)
        out = self._net.forward().reshape(len(inks), -1)
        return unit_rows(out)


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """Each row scaled to length one (a zero row stays zero)."""
    rows = np.asarray(rows, np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-6)
