"""Writing a trained PyTorch net as the ONNX file the scanner loads through OpenCV's dnn module.

Shared by the training scripts (finder_training, face_training, lean_training); PyTorch is
needed to train and export, never to run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger(__name__)


def export_onnx(net, input_shape: Sequence[int], out: Path, input_name: str, output_name: str,
                dynamic_axes: Mapping[str, Mapping[int, str]]) -> None:  # pragma: no cover - needs PyTorch
    """Write `net` (in eval mode) to `out`, traced on zeros of `input_shape`, in the opset OpenCV reads."""
    import torch

    net.eval()
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(*input_shape), str(out), input_names=[input_name], output_names=[output_name],
                      opset_version=13, dynamo=False, dynamic_axes={k: dict(v) for k, v in dynamic_axes.items()})
    log.info("wrote %s (%.0f KiB)", out, out.stat().st_size / 1024)
