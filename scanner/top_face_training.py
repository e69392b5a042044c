"""Training the top-face locator (scanner/top_face.py) from the project's own labelled Tally fixtures.

Run with a Python that has PyTorch and onnx (neither is a dependency of dicetray; the runtime
needs OpenCV only):

    python -m venv .trainenv && .trainenv/bin/pip install torch onnx opencv-python-headless
    .trainenv/bin/python -m scanner.top_face_training --hold-out tallyup-s00 tallyup-s05 tallyup-s10 \
        --epochs 24 --out scanner/data/top_face.onnx

(the shipped net: three dev tables held out and checked on, median corner error 0.040 of a
side; without --out it trains and checks only).

It learns from the flat, visible dice of the Tally dev split, the teach set and the lean set,
never from the test split or the alternative look, which measure it. Each die is cut many times
about a square as the reader might find it: the squares the scanner itself finds there (where
the net will look), and squares shifted up to a third of a side, 0.8-1.4 times as large. Every
cut is turned and mirrored, tinted, brightened or darkened, blurred and noisy, some with a
shadow cast across the die (face_training.shadowed). The net learns the labelled corners, in
sides of the square cut about, whichever corner it names first (the loss takes the best of the
four starts). Cutting and augmenting are plain numpy and OpenCV, tested without PyTorch.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from scanner.evaluate import match
from scanner.face_training import MIN_VISIBLE, shadowed
from scanner.labels import mean_side
from scanner.tally_colour import balance_gains
from scanner.top_face import CROP_SIDE, crop_about, net_input
from scanner.tossup import order_clockwise
from scanner.training import cosine_rate, export_onnx, labelled_images, optimiser_step

log = logging.getLogger(__name__)

#: (folder under fixtures/, split) of the photos it learns from. Not the facemore set (the
#: Up Die in every roll), which the face net learns from: two nets trained with it, the same
#: seed, the scanner a little changed between them, placed the held-out dev tables' corners
#: better (median 0.034 and 0.033 of a side) but read unlike each other. One read within a
#: die of the shipped net on the dev split, teach and lean sets, alt look and the dev split
#: as other cameras would take it, with no confident mistake more, and read tallyup-v0's
#: small Up Die; the other made 2 more confident mistakes on the dev split and 6 more as
#: other cameras would take it. Which net reads better rests more on the draw than on the
#: data.
SOURCES = (("tallyup", "dev"), ("tallyup-teach", "teach"), ("lean/tallyup", "lean"))
#: Each die's stored crop reaches this many sides from its centre: room for every square cut about.
STORED_REACH = 2.6
#: Squares cut about: shifted up to this many sides from the top face's centre, and this many
#: times as large.
MAX_SHIFT = 0.35
SIZES = (0.8, 1.4)
#: Share of the cuts about a square the scanner found (when it found the die).
FOUND_SHARE = 0.4
#: Share of the cuts made from the photo shrunk 0.45-0.9 times, some saved again as JPEG at
#: quality 50-90: dice as small and soft as a 640x480 camera's (25-30 pixels a side; the
#: photos' are 35-57). Off: a net trained with 0.4 of them (30 epochs, nothing held out)
#: read a dev and a test die wrong with confidence and one more Tally video wrong
#: (tallyup-v1), and still not tallyup-v0's small Up Die, whose square it placed 2 px large.
SMALL_SHARE = 0.0
SMALL_FACTORS = (0.45, 0.9)


@dataclass(frozen=True)
class TopFaceExample:
    """One labelled flat die: a crop of its photo about it, its top face's corners there
    (clockwise), the squares the scanner found for it there, and the photo's balance."""

    crop: np.ndarray  # BGR
    corners: np.ndarray  # 4 x 2 float32, crop pixels
    found: tuple[np.ndarray, ...]
    gains: np.ndarray
    name: str


def load_examples(fixtures: Path, sources: Sequence[tuple[str, str]] = SOURCES) -> list[TopFaceExample]:
    """The flat, visible Tally dice of the sources, each with the squares the scanner found for it."""
    from scanner.reader import Scanner  # the scanner finds the squares; the net must not place them

    scanner = Scanner(dice_set="tallyup")
    examples = []
    for folder, split in sources:
        for photo, image in labelled_images(fixtures / folder, split, lambda photo: bool(photo.dice)):
            gains = balance_gains(image)
            readings = scanner.read(image)
            found = {li: np.float32(readings[ri].corners) for li, ri in match(photo.dice, readings)}
            visible = photo.scene.get("visible_fraction", [1.0] * len(photo.dice))
            for index, die in enumerate(photo.dice):
                if die.cocked or (index < len(visible) and visible[index] < MIN_VISIBLE):
                    continue
                reach = STORED_REACH * die.size
                x0, y0 = max(0, int(die.center[0] - reach)), max(0, int(die.center[1] - reach))
                x1 = min(image.shape[1], int(die.center[0] + reach) + 1)
                y1 = min(image.shape[0], int(die.center[1] + reach) + 1)
                offset = np.float32([x0, y0])
                squares = (found[index] - offset,) if index in found else ()
                examples.append(TopFaceExample(image[y0:y1, x0:x1].copy(), order_clockwise(np.float32(die.corners) - offset),
                                               squares, gains, f"{photo.image.name}#{index}"))
    return examples


def square_about(rng: np.random.Generator, example: TopFaceExample) -> tuple[np.ndarray, float]:
    """(centre, side) of a square as the reader might find it about `example`'s top face."""
    if example.found and rng.random() < FOUND_SHARE:
        square = example.found[int(rng.integers(len(example.found)))]
        side = mean_side(square)
        return square.mean(axis=0) + rng.normal(0.0, 0.03, 2).astype(np.float32) * side, side * float(rng.uniform(0.95, 1.05))
    side = mean_side(example.corners)
    heading = float(rng.uniform(0.0, 2 * math.pi))
    shift = MAX_SHIFT * math.sqrt(float(rng.random())) * side
    centre = example.corners.mean(axis=0) + np.float32([math.cos(heading), math.sin(heading)]) * shift
    return centre.astype(np.float32), side * float(rng.uniform(*SIZES))


def turned(crop: np.ndarray, corners: np.ndarray, quarter_turns: int, mirrored: bool) -> tuple[np.ndarray, np.ndarray]:
    """A crop and its corners (about the crop's centre) turned by quarter turns anticlockwise
    and, if `mirrored`, mirrored left to right; the corners still go round clockwise."""
    corners = np.float32(corners)
    for _ in range(quarter_turns % 4):
        crop = np.rot90(crop)
        corners = np.stack([corners[:, 1], -corners[:, 0]], axis=1)
    if mirrored:
        crop = crop[:, ::-1]
        corners = corners[::-1] * np.float32([-1.0, 1.0])
    return np.ascontiguousarray(crop), np.ascontiguousarray(corners, np.float32)


def shrunk(rng: np.random.Generator, example: TopFaceExample, factor: float) -> TopFaceExample:
    """`example` with its crop shrunk `factor` times (half of them saved again as JPEG), its
    corners and squares with it."""
    crop = cv2.resize(example.crop, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
    if rng.random() < 0.5:
        encoded = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(50, 91))])[1]
        crop = cv2.imdecode(encoded, cv2.IMREAD_COLOR)
    # Pixel i covers i-0.5 to i+0.5 (as in crop_about) in both.
    scale = np.float32([crop.shape[1] / example.crop.shape[1], crop.shape[0] / example.crop.shape[0]])

    def moved(points: np.ndarray) -> np.ndarray:
        return ((points + 0.5) * scale - 0.5).astype(np.float32)

    return replace(example, crop=crop, corners=moved(example.corners), found=tuple(moved(q) for q in example.found))


def augmented(rng: np.random.Generator, example: TopFaceExample, small_share: float = SMALL_SHARE
              ) -> tuple[np.ndarray, np.ndarray]:
    """One net input (3 x CROP_SIDE x CROP_SIDE) of `example` and its corners (4 x 2, in sides
    of the square cut about, from its centre); `small_share` of them from the photo shrunk."""
    if small_share > 0 and rng.random() < small_share:
        example = shrunk(rng, example, float(rng.uniform(*SMALL_FACTORS)))
    image = example.crop
    if rng.random() < 0.3:
        image = shadowed(rng, image, example.corners)
    if rng.random() < 0.3:
        image = cv2.GaussianBlur(image, (0, 0), float(rng.uniform(0.4, 1.2)))
    if rng.random() < 0.5:
        noise = rng.normal(0.0, float(rng.uniform(1.0, 6.0)), image.shape)
        image = np.clip(image.astype(np.float32) + noise, 0, 255).astype(np.uint8)
    centre, side = square_about(rng, example)
    crop = crop_about(image, centre, side)
    crop, corners = turned(crop, (example.corners - centre) / side, int(rng.integers(4)), bool(rng.random() < 0.5))
    gains = example.gains * rng.uniform(0.85, 1.15, 3).astype(np.float32) * float(rng.uniform(0.6, 1.3))
    return net_input(crop[None], gains[None])[0], corners


def dataset(rng: np.random.Generator, examples: Sequence[TopFaceExample], per_example: int,
            small_share: float = SMALL_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """(inputs N x 3 x CROP_SIDE x CROP_SIDE, corners N x 4 x 2), `per_example` cuts of each die."""
    inputs = np.zeros((len(examples) * per_example, 3, CROP_SIDE, CROP_SIDE), np.float32)
    corners = np.zeros((len(examples) * per_example, 4, 2), np.float32)
    for index, example in enumerate(examples):
        for k in range(per_example):
            inputs[index * per_example + k], corners[index * per_example + k] = augmented(rng, example, small_share)
    return inputs, corners


def corner_error(predicted: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Per pair, the mean distance between predicted and true corners (N x 4 x 2 each), at the
    best of the four starts of the predicted order."""
    predicted, corners = np.asarray(predicted, np.float32), np.asarray(corners, np.float32)
    errors = [np.linalg.norm(np.roll(predicted, k, axis=1) - corners, axis=2).mean(axis=1) for k in range(4)]
    return np.min(errors, axis=0)


def build_net():  # pragma: no cover - needs PyTorch
    import torch.nn as nn

    def block(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    # About 13 M multiply-adds a die: a millisecond or two, spent only on faces left unsure.
    return nn.Sequential(block(3, 16, 2), block(16, 32), block(32, 32, 2), block(32, 64), block(64, 64, 2),
                         block(64, 96, 2), nn.Flatten(), nn.Linear(96 * (CROP_SIDE // 16) ** 2, 128), nn.ReLU(inplace=True),
                         nn.Linear(128, 8))


def train(examples: Sequence[TopFaceExample], epochs: int, per_example: int, seed: int, out: Path | None,
          checks: Sequence[TopFaceExample] = (), small_share: float = SMALL_SHARE) -> None:  # pragma: no cover - needs PyTorch
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = build_net()
    optimiser = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    started = time.monotonic()
    check_x, check_y = dataset(np.random.default_rng(seed + 1), checks, 6) if checks else (None, None)
    for epoch in range(epochs):
        x, y = (torch.from_numpy(a) for a in dataset(rng, examples, per_example, small_share))
        order = torch.randperm(len(y))
        net.train()
        total = 0.0
        for start in range(0, len(y), 128):
            pick = order[start:start + 128]
            predicted = net(x[pick]).reshape(-1, 4, 2)
            losses = torch.stack([F.smooth_l1_loss(torch.roll(predicted, k, dims=1), y[pick], reduction="none", beta=0.02)
                                  .mean(dim=(1, 2)) for k in range(4)], dim=1)
            loss = losses.min(dim=1).values.mean()
            optimiser_step(optimiser, loss)
            total += float(loss.detach()) * len(pick)
        cosine_rate(optimiser, 2e-3, epoch, epochs)
        message = f"epoch {epoch + 1}/{epochs} loss {total / len(y):.4f}"
        if check_x is not None:
            net.eval()
            with torch.no_grad():
                predicted = net(torch.from_numpy(check_x)).reshape(-1, 4, 2).numpy()
            errors = corner_error(predicted, check_y)
            message += f", held-out corner error median {np.median(errors):.3f} p90 {np.percentile(errors, 90):.3f} sides"
        log.info("%s (%.0f s)", message, time.monotonic() - started)
    if out is not None:
        export_onnx(net, (1, 3, CROP_SIDE, CROP_SIDE), out, "crop", "corners", {"crop": {0: "dice"}, "corners": {0: "dice"}})


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs PyTorch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures")
    parser.add_argument("--out", type=Path, default=None, help="the ONNX file to write (none: train and check only)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--per-example", type=int, default=16, help="cuts of each die per epoch")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hold-out", nargs="*", default=[], help="setups to leave out (e.g. tallyup-s02) and check on")
    parser.add_argument("--small-share", type=float, default=SMALL_SHARE, help="share of cuts from the photo shrunk")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    examples = load_examples(args.fixtures)
    kept = [e for e in examples if not any(e.name.startswith(s + "-") for s in args.hold_out)]
    checks = [e for e in examples if any(e.name.startswith(s + "-") for s in args.hold_out)]
    log.info("%d dice to learn from, %d held out", len(kept), len(checks))
    train(kept, args.epochs, args.per_example, args.seed, args.out, checks, args.small_share)


if __name__ == "__main__":  # pragma: no cover
    main()
