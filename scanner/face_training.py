"""Training the face net (scanner/face_net.py) from the project's own labelled Tally fixtures.

Run with a Python that has PyTorch and onnx (neither is a dependency of dicetray; the runtime
needs OpenCV only):

    python -m venv .trainenv && .trainenv/bin/pip install torch onnx opencv-python-headless
    .trainenv/bin/python -m scanner.face_training --out scanner/data/face_net.onnx

then rebuild the built-in Tally look, which stores the codes of its faces:
`dicetray calibrate build-default` (calibration.teach.build_default).

It learns from the flat dice of the Tally dev split, the teach set, the lean set and the facemore
set (git-ignored: render it as fixtures/README.md says; the Up Die in every roll), never from the
test split or the alternative look (`fixtures/alt`), which measure it. A face with a light print
that the lamp's glare blew out (scene.glare_fraction at least labels.BLOWN_OUT) shows no print
and is taught as "no face". Every die is cut many times, each time as the reader might find it:
its top face shifted, grown or shrunk, turned by any angle, under a balance a little off,
blurred and noisy, some with a shadow cast across the die, some read as the reader reads a face
left unsure (the shade divided out first). The net is taught to name the face from the ink mask
alone (a cosine classifier over every face label of the set, and "no face" for a square cut off
the print), so that its codes for one face lie together whatever die, colour or turn it came
from. Cutting and augmenting are plain numpy and OpenCV, tested without PyTorch.
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

from scanner.face_net import CODE_SIZE, NO_FACE
from scanner.labels import BLOWN_OUT, mean_side
from scanner.training import cosine_rate, export_onnx, labelled_images, missing_folders, optimiser_step
from scanner.tally_colour import balance_gains
from scanner.tally_model import DIE_FACES, PATCH_SIDE, TallyParams
from scanner.tally_prints import face_patch, ink_of, shadow_flattened

log = logging.getLogger(__name__)

#: Every face label of the set (a star is a star on any die): the classes the net is taught.
FACE_LABELS: tuple[str, ...] = tuple(sorted({face for faces in DIE_FACES.values() for face in faces}))
#: A square that misses the print (see `jittered`) is taught as a class of its own.
CLASSES: tuple[str, ...] = (*FACE_LABELS, NO_FACE)
#: (folder under fixtures/, split) of the pictures it learns from.
SOURCES = (("tallyup", "dev"), ("tallyup-teach", "teach"), ("lean/tallyup", "lean"), ("facemore/tallyup", "facemore"))
#: Dice less visible than this (behind the rim or another die) show too little print to teach.
MIN_VISIBLE = 0.9
#: A crop around each die, in sides from its centre: room for every jittered square.
CROP = 1.6
#: Shares of the cuts with a shadow cast across the die, and read as the reader reads a face
#: left unsure (its shade divided out first, see tally_prints.shadow_flattened).
SHADOWED = 0.3
FLATTENED = 0.4


@dataclass(frozen=True)
class FaceExample:
    """One labelled flat die: a crop of its photo around it and its top face's corners there."""

    crop: np.ndarray  # BGR
    corners: np.ndarray  # 4x2 float32, crop pixels, clockwise
    gains: np.ndarray  # the photo's white balance (tally_colour.balance_gains)
    die: str
    face: str
    name: str
    #: +1 print lighter than the body, -1 darker (see tally_prints.shadow_flattened).
    ink_sign: int = 1


def load_face_examples(fixtures: Path) -> list[FaceExample]:
    """The flat, visible Tally dice of the dev split, teach set, lean set and facemore set (a
    light print glare blew out taught as no face)."""
    examples = []
    blown: set[str] = set()  # the names of the examples whose top face glare blew out
    for folder, split in SOURCES:
        for photo, image in labelled_images(fixtures / folder, split, lambda photo: bool(photo.dice)):
            gains = balance_gains(image)
            visible = photo.scene.get("visible_fraction", [1.0] * len(photo.dice))
            glare = photo.scene.get("glare_fraction", [0.0] * len(photo.dice))
            for index, die in enumerate(photo.dice):
                if die.cocked or die.face not in FACE_LABELS or (index < len(visible) and visible[index] < MIN_VISIBLE):
                    continue
                reach = CROP * die.size
                x0, y0 = max(0, int(die.center[0] - reach)), max(0, int(die.center[1] - reach))
                x1, y1 = min(image.shape[1], int(die.center[0] + reach) + 1), min(image.shape[0], int(die.center[1] + reach) + 1)
                corners = np.float32(die.corners) - np.float32([x0, y0])
                crop = image[y0:y1, x0:x1].copy()
                _, body, ink = ink_of(face_patch(crop, corners, gains))
                name = f"{photo.image.name}#{index}"
                if index < len(glare) and glare[index] >= BLOWN_OUT:
                    blown.add(name)
                examples.append(FaceExample(crop, corners, gains, die.die, die.face, name,
                                            1 if float(ink.sum()) >= float(body.sum()) else -1))
    # Shadows and glare flip a few dice's own measure: each die's print is as most of its
    # examples show it.
    signs = {die: 1 if sum(e.ink_sign for e in examples if e.die == die) >= 0 else -1 for die in {e.die for e in examples}}
    # Glare blows a light print out with its body: such a face shows no print and is taught as
    # no face, not as the label's face (which the net could only guess, and would learn to).
    # A dark print (the white Up Die's) stays where the body around it clips.
    return [replace(e, ink_sign=signs[e.die], face=NO_FACE if e.name in blown and signs[e.die] > 0 else e.face)
            for e in examples]


def jittered(rng: np.random.Generator, corners: np.ndarray, off: bool = False) -> np.ndarray:
    """The top face as the reader might find it: shifted up to 0.15 of a side, 0.85-1.45
    times as large (a neighbour or a shadow joined its outline), turned by any angle (an
    outline's edges need not run along the top face's). `off`: shifted 0.4-0.7 of a side
    instead, so that part of the print is cut off and part of the tray or a neighbour is in
    (what a misplaced square shows: no face at all)."""
    corners = np.float32(corners)
    centre = corners.mean(axis=0)
    side = mean_side(corners)
    angle = math.radians(float(rng.uniform(-45.0, 45.0)))
    scale = float(rng.uniform(0.85, 1.45))
    c, s = math.cos(angle) * scale, math.sin(angle) * scale
    if off:
        heading = float(rng.uniform(0.0, 2 * math.pi))
        shift = np.float32([math.cos(heading), math.sin(heading)]) * float(rng.uniform(0.4, 0.7))
    else:
        shift = rng.uniform(-0.15, 0.15, 2).astype(np.float32)
    moved = (corners - centre) @ np.float32([[c, s], [-s, c]]) + centre + shift * side
    return np.roll(moved, int(rng.integers(0, 4)), axis=0).astype(np.float32)


def augmented_ink(rng: np.random.Generator, example: FaceExample, off: bool = False) -> np.ndarray:
    """One net input (PATCH_SIDE square ink mask) of `example`, cut as the reader cuts it
    (`off`: cut off the print, see `jittered`)."""
    crop = example.crop
    if rng.random() < 0.3:
        crop = cv2.GaussianBlur(crop, (0, 0), float(rng.uniform(0.4, 1.1)))
    if rng.random() < 0.5:
        noise = rng.normal(0.0, float(rng.uniform(1.0, 6.0)), crop.shape)
        crop = np.clip(crop.astype(np.float32) + noise, 0, 255).astype(np.uint8)
    if rng.random() < SHADOWED:
        crop = shadowed(rng, crop, example.corners)
    gains = example.gains * rng.uniform(0.85, 1.15, 3).astype(np.float32) * float(rng.uniform(0.7, 1.25))
    patch = face_patch(crop, jittered(rng, example.corners, off), np.float32(gains))
    if rng.random() < FLATTENED:
        patch = shadow_flattened(patch, example.ink_sign, TallyParams())
    ink, _, _ = ink_of(patch)
    return ink


def shadowed(rng: np.random.Generator, crop: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """The crop with a straight-edged shadow (a neighbour's, the wall's, a hand's) across the
    die: one side of a line through the top face darkened by 25-75 %, its edge soft over a
    few pixels, as a lamp above the tray casts it."""
    corners = np.float32(corners)
    centre = corners.mean(axis=0)
    side = mean_side(corners)
    heading = float(rng.uniform(0.0, 2 * math.pi))
    normal = np.float32([math.cos(heading), math.sin(heading)])
    through = centre + normal * float(rng.uniform(-0.35, 0.35)) * side
    ys, xs = np.mgrid[0:crop.shape[0], 0:crop.shape[1]].astype(np.float32)
    signed = (xs - through[0]) * normal[0] + (ys - through[1]) * normal[1]
    softness = float(rng.uniform(0.3, 0.1 * side + 0.5))
    lit = 1.0 / (1.0 + np.exp(-np.clip(signed / softness, -30.0, 30.0)))
    darkness = float(rng.uniform(0.25, 0.75))
    light = (1.0 - darkness) + darkness * lit
    return np.clip(crop.astype(np.float32) * light[..., None], 0, 255).astype(np.uint8)


def dataset(rng: np.random.Generator, examples: Sequence[FaceExample], per_example: int,
            off_per_example: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(inputs N x 1 x PATCH_SIDE x PATCH_SIDE float32, class indices into CLASSES): per example,
    `per_example` cuts of its face and `off_per_example` cuts off it (class NO_FACE)."""
    cuts = per_example + off_per_example
    inputs = np.zeros((len(examples) * cuts, 1, PATCH_SIDE, PATCH_SIDE), np.float32)
    classes = np.zeros(len(examples) * cuts, np.int64)
    for index, example in enumerate(examples):
        for k in range(cuts):
            off = k >= per_example
            inputs[index * cuts + k, 0] = augmented_ink(rng, example, off)
            classes[index * cuts + k] = CLASSES.index(NO_FACE if off else example.face)
    return inputs, classes


def build_net():  # pragma: no cover - needs PyTorch
    import torch.nn as nn

    def block(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    # About 6 M multiply-adds a face: well under a millisecond for a frame's seven dice.
    return nn.Sequential(block(1, 24), block(24, 32, 2), block(32, 48), block(48, 64, 2), block(64, 64, 2),
                         nn.Flatten(), nn.Dropout(0.2), nn.Linear(64 * (PATCH_SIDE // 8) ** 2, CODE_SIZE))


def train(examples: Sequence[FaceExample], epochs: int, per_example: int, seed: int, out: Path,
          checks: Sequence[FaceExample] = ()) -> None:  # pragma: no cover - needs PyTorch
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = build_net()
    # A cosine classifier: its weights are one unit code per face, as teaching's mean codes are.
    centres = torch.nn.Parameter(torch.randn(len(CLASSES), CODE_SIZE))
    optimiser = torch.optim.AdamW([*net.parameters(), centres], lr=3e-3, weight_decay=1e-4)
    started = time.monotonic()
    check_x, check_y = dataset(np.random.default_rng(seed + 1), checks, 4, 0) if checks else (None, None)
    for epoch in range(epochs):
        # Fresh cuts every epoch: the net never sees the same augmentation twice.
        x, y = (torch.from_numpy(a) for a in dataset(rng, examples, per_example))
        order = torch.randperm(len(y))
        net.train()
        total = 0.0
        for start in range(0, len(y), 256):
            pick = order[start:start + 256]
            codes = F.normalize(net(x[pick]), dim=1)
            logits = 16.0 * codes @ F.normalize(centres, dim=1).T
            loss = F.cross_entropy(logits, y[pick], label_smoothing=0.05)
            optimiser_step(optimiser, loss)
            total += float(loss.detach()) * len(pick)
        cosine_rate(optimiser, 3e-3, epoch, epochs)
        message = f"epoch {epoch + 1}/{epochs} loss {total / len(y):.3f}"
        if check_x is not None:
            net.eval()
            with torch.no_grad():
                codes = F.normalize(net(torch.from_numpy(check_x)), dim=1)
                guess = (codes @ F.normalize(centres, dim=1).T).argmax(dim=1).numpy()
            message += f", held-out faces {float(np.mean(guess == check_y)) * 100:.1f} %"
        log.info("%s (%.0f s)", message, time.monotonic() - started)
    export_onnx(net, (1, 1, PATCH_SIDE, PATCH_SIDE), out, "ink", "code", {"ink": {0: "faces"}, "code": {0: "faces"}})


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs PyTorch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("data") / "face_net.onnx")
    parser.add_argument("--epochs", type=int, default=24)
    parser.add_argument("--per-example", type=int, default=12, help="cuts of each die per epoch")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hold-out", nargs="*", default=[], help="setups to leave out (e.g. tallyup-s02) and check on")
    args = parser.parse_args(argv)
    missing = missing_folders(args.fixtures, [folder for folder, _ in SOURCES])
    if missing:
        parser.error(missing)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    examples = load_face_examples(args.fixtures)
    kept = [e for e in examples if not any(e.name.startswith(s + "-") for s in args.hold_out)]
    checks = [e for e in examples if any(e.name.startswith(s + "-") for s in args.hold_out)]
    log.info("%d dice to learn from, %d held out", len(kept), len(checks))
    train(kept, args.epochs, args.per_example, args.seed, args.out, checks)


if __name__ == "__main__":  # pragma: no cover
    main()
