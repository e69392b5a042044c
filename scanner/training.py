"""What the training scripts (finder_training, face_training, lean_training) share: reading
their labelled photos, and writing a trained PyTorch net as the ONNX file the scanner loads
through OpenCV's dnn module. PyTorch is needed to train and export, never to run.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import cv2
import numpy as np

from scanner.labels import LabelledPhoto, photo_labels

log = logging.getLogger(__name__)


def missing_folders(fixtures: Path, folders: Sequence[str]) -> str | None:
    """Why a training script cannot run on `fixtures` (the `folders` under it that are not
    there: git-ignored sets not yet rendered), or None when every one is there."""
    missing = [folder for folder in folders if not (fixtures / folder).is_dir()]
    if not missing:
        return None
    return f"{', '.join(missing)} missing under {fixtures}: render it first (fixtures/README.md)"


def labelled_images(folder: Path, split: str | None = None, keep: Callable[[LabelledPhoto], bool] = lambda photo: True
                    ) -> Iterator[tuple[LabelledPhoto, np.ndarray]]:
    """Each labelled photo of `folder` (of `split`, if given) that `keep` accepts, with its
    picture (BGR); a photo that cannot be read is named in the log and left out."""
    for photo in photo_labels(folder, split):
        if not keep(photo):
            continue
        image = cv2.imread(str(photo.image), cv2.IMREAD_COLOR)
        if image is None:
            log.warning("%s: cannot be read; left out", photo.image)
            continue
        yield photo, image


def export_onnx(net, input_shape: Sequence[int], out: Path, input_name: str, output_name: str,
                dynamic_axes: Mapping[str, Mapping[int, str]]) -> None:  # pragma: no cover - needs PyTorch
    """Write `net` (in eval mode) to `out`, traced on zeros of `input_shape`, in the opset OpenCV reads."""
    import torch

    net.eval()
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(*input_shape), str(out), input_names=[input_name], output_names=[output_name],
                      opset_version=13, dynamo=False, dynamic_axes={k: dict(v) for k, v in dynamic_axes.items()})
    log.info("wrote %s (%.0f KiB)", out, out.stat().st_size / 1024)


def cosine_rate(optimiser, base: float, epoch: int, epochs: int) -> None:
    """Set every parameter group's learning rate for the epoch after `epoch` (0-based) on a
    cosine from `base` down to zero at the last epoch."""
    for group in optimiser.param_groups:
        group["lr"] = base * 0.5 * (1 + math.cos(math.pi * (epoch + 1) / epochs))


def optimiser_step(optimiser, loss) -> None:  # pragma: no cover - needs PyTorch
    """One step of `optimiser` down the gradient of `loss`."""
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
