"""Training the die finder (scanner/finder.py) from the project's own labelled fixtures.

Run with a Python that has PyTorch and onnx (neither is a dependency of dicetray; the runtime
needs OpenCV only):

    python -m venv .trainenv && .trainenv/bin/pip install torch onnx opencv-python-headless
    .trainenv/bin/python -m scanner.finder_training --out scanner/data/finder.onnx

It learns from the dev split's stills, the settled frames of the dev videos, the teach set and
the lean set (`fixtures/lean`: scenes of their own with a cocked die in every roll), never from the test split or the alternative Tally look (`fixtures/alt`), which measure it.
Every photo is shown many times with a new random turn, scale, shift, lamp colour, brightness,
stray light, noise, blur and JPEG compression, so that it learns dice rather than our tables.
The targets (`encode_targets`) and the augmentation are plain numpy and tested without PyTorch.

The shipped net was trained before the lean set existed. A net trained with it (6000 steps,
lean tables lean-tossup-s12..s15 and lean-tallyup-s07..s09 held out) caught more cocked Toss Up
dice, but also called drawn flat dice cocked, found one Toss Up test die fewer and two dice on
an empty Tally tray, so it was not shipped.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import cv2
import numpy as np

from scanner.finder import CHANNELS, FACE_CHANNELS, IDENTITIES, IDENTITY_CHANNELS, INPUT_WIDTH, STRIDE, TOSSUP_FACES
from scanner.labels import LabelledDie, LabelledPhoto, load_video_label
from scanner.training import export_onnx, labelled_images, optimiser_step

log = logging.getLogger(__name__)

#: The training canvas (input pixels); the net is fully convolutional, so any size works later.
CANVAS = (INPUT_WIDTH, 192)
#: Dice less visible than this (behind the rim or another die) are neither taught as dice nor
#: as background.
MIN_VISIBLE = 0.3


@dataclass(frozen=True)
class Example:
    """One labelled picture for training: the frame and its dice (frame pixels)."""

    image: np.ndarray
    dice: tuple[LabelledDie, ...]
    visible: tuple[float, ...]
    name: str


def load_examples(fixtures: Path, setups_out: Sequence[str] = ()) -> list[Example]:
    """The dev, teach and lean pictures of both dice sets, less any setup named in `setups_out`."""
    examples = []
    folders = [(fixtures / "tossup", "dev"), (fixtures / "tallyup", "dev"), (fixtures / "tallyup-teach", "teach"),
               # Scenes of their own with a die leaning in every roll: the library alone has too few.
               (fixtures / "lean" / "tossup", "lean"), (fixtures / "lean" / "tallyup", "lean")]

    def kept(photo: LabelledPhoto) -> bool:
        return not (photo.scene.get("setup") in setups_out or any(photo.image.name.startswith(s + "-") for s in setups_out))

    for folder, split in folders:
        for photo, image in labelled_images(folder, split, kept):
            visible = tuple(photo.scene.get("visible_fraction", [1.0] * len(photo.dice)))
            examples.append(Example(image, photo.dice, visible, photo.image.name))
    for path in sorted((fixtures / "videos").glob("*.json")):
        video = load_video_label(path)
        if video.scene.get("split") != "dev":
            continue
        capture = cv2.VideoCapture(str(video.video))
        frames = []
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(frame)
        capture.release()
        for roll in video.rolls:
            # Still for about 1.5 s after settling: a few frames, each with its own noise.
            for offset in (2, 12, 24):
                index = roll.settled_frame + offset
                if index < len(frames):
                    examples.append(Example(frames[index], roll.dice, (1.0,) * len(roll.dice), f"{video.video.name}#{index}"))
    return examples


def random_transform(rng: np.random.Generator, frame_size: tuple[int, int], canvas: tuple[int, int] = CANVAS) -> np.ndarray:
    """A 2x3 affine map from frame pixels to canvas pixels: fit the width, then a random
    scale (0.7-1.35), turn, mirror and shift."""
    width, height = frame_size
    fit = canvas[0] / width
    scale = fit * float(rng.uniform(0.7, 1.35))
    angle = float(rng.uniform(0.0, 2 * math.pi))
    mirror = -1.0 if rng.random() < 0.5 else 1.0
    c, s = math.cos(angle) * scale, math.sin(angle) * scale
    linear = np.array([[c, -s], [s, c]]) @ np.diag([mirror, 1.0])
    centre = np.array([width / 2, height / 2])
    shift = np.array([canvas[0] / 2, canvas[1] / 2]) + rng.uniform(-0.25, 0.25, 2) * np.array(canvas)
    offset = shift - linear @ centre
    return np.hstack([linear, offset[:, None]])


def warp_points(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return points @ matrix[:, :2].T + matrix[:, 2]


def relight(rng: np.random.Generator, image: np.ndarray) -> np.ndarray:
    """Another lamp and camera: colour cast, brightness, stray light, tone, noise, blur, JPEG."""
    x = image.astype(np.float32) / 255.0
    x = x ** 2.2  # roughly linear light, where lamps add and scale
    gains = np.array([rng.uniform(0.7, 1.35), 1.0, rng.uniform(0.7, 1.35)], np.float32)  # B, G, R
    x *= gains * float(np.exp(rng.uniform(math.log(0.45), math.log(2.0))))
    if rng.random() < 0.4:
        x += rng.uniform(0.0, 0.03, 3).astype(np.float32)
    x = np.clip(x, 0.0, 1.0) ** (1.0 / float(rng.uniform(1.9, 2.5)))
    if rng.random() < 0.3:
        x = cv2.GaussianBlur(x, (0, 0), float(rng.uniform(0.3, 1.0)))
    x += rng.normal(0.0, float(rng.uniform(0.0, 0.03)), x.shape).astype(np.float32)
    out = np.clip(x * 255.0 + 0.5, 0, 255).astype(np.uint8)
    if rng.random() < 0.5:
        ok, data = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(40, 92))])
        out = cv2.imdecode(data, cv2.IMREAD_COLOR)
    return out


def encode_targets(dice: Sequence[LabelledDie], visible: Sequence[float], matrix: np.ndarray,
                   canvas: tuple[int, int] = CANVAS) -> tuple[np.ndarray, np.ndarray]:
    """The training target for one picture on a canvas, and its weights.

    Returns (target CxHxW, weight CxHxW) in the order of `finder.CHANNELS`: the centre map is a
    Gaussian bump per die (weight 0 around dice too hidden to teach); the other channels are
    taught in the 3x3 cells about each centre (colours on flat Toss Up dice only). A class
    channel group holds the class index in its first channel.
    """
    grid_w, grid_h = canvas[0] // STRIDE, canvas[1] // STRIDE
    target = np.zeros((len(CHANNELS), grid_h, grid_w), np.float32)
    weight = np.zeros_like(target)
    weight[0] = 1.0
    ys, xs = np.mgrid[0:grid_h, 0:grid_w].astype(np.float32) + 0.5
    for die, seen in zip(dice, visible):
        corners = warp_points(matrix, np.array(die.corners, np.float64))
        centre = warp_points(matrix, np.array([die.center], np.float64))[0] / STRIDE
        side = float(np.mean(np.linalg.norm(corners - np.roll(corners, -1, axis=0), axis=1)))
        gx, gy = int(math.floor(centre[0])), int(math.floor(centre[1]))
        sigma = max(0.6, side / STRIDE / 6.0)
        if seen < MIN_VISIBLE:
            near = (xs - centre[0]) ** 2 + (ys - centre[1]) ** 2 <= (side / STRIDE) ** 2
            weight[0][near] = 0.0
            continue
        bump = np.exp(-((xs - centre[0]) ** 2 + (ys - centre[1]) ** 2) / (2 * sigma * sigma))
        target[0] = np.maximum(target[0], bump)
        if not (0 <= gx < grid_w and 0 <= gy < grid_h):
            continue
        target[0, gy, gx] = 1.0
        edge = corners[1] - corners[0]
        turn = 4.0 * math.atan2(edge[1], edge[0])
        for cy in range(gy - 1, gy + 2):
            for cx in range(gx - 1, gx + 2):
                if not (0 <= cx < grid_w and 0 <= cy < grid_h):
                    continue
                target[1:7, cy, cx] = (centre[0] - cx - 0.5, centre[1] - cy - 0.5, math.log(max(side, 1.0)),
                                       math.cos(turn), math.sin(turn), float(die.cocked))
                weight[1:7, cy, cx] = 1.0 if (cx, cy) == (gx, gy) else 0.5
                if die.die == "tossup" and not die.cocked and die.face in TOSSUP_FACES:
                    target[FACE_CHANNELS.start, cy, cx] = TOSSUP_FACES.index(die.face)
                    weight[FACE_CHANNELS, cy, cx] = weight[1, cy, cx]
                if die.die in IDENTITIES:
                    target[IDENTITY_CHANNELS.start, cy, cx] = IDENTITIES.index(die.die)
                    weight[IDENTITY_CHANNELS, cy, cx] = weight[1, cy, cx]
    return target, weight


def sample(rng: np.random.Generator, example: Example, canvas: tuple[int, int] = CANVAS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One augmented (input 3xHxW float32 RGB 0-1, target, weight) from an example."""
    height, width = example.image.shape[:2]
    matrix = random_transform(rng, (width, height), canvas)
    scale = math.sqrt(abs(np.linalg.det(matrix[:, :2])))
    # Shrink with area averaging first, as the runtime does, then turn and shift.
    small_w, small_h = max(8, int(round(width * scale))), max(8, int(round(height * scale)))
    small = cv2.resize(example.image, (small_w, small_h), interpolation=cv2.INTER_AREA)
    to_small = np.diag([small_w / width, small_h / height])
    rest = matrix.copy()
    rest[:, :2] = matrix[:, :2] @ np.linalg.inv(to_small)
    border = tuple(int(v) for v in rng.integers(0, 256, 3))
    warped = cv2.warpAffine(small, rest, canvas, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    warped = relight(rng, warped)
    target, weight = encode_targets(example.dice, example.visible, matrix, canvas)
    rgb = warped[:, :, ::-1].astype(np.float32).transpose(2, 0, 1) / 255.0
    return np.ascontiguousarray(rgb), target, weight


def batches(rng: np.random.Generator, examples: Sequence[Example], size: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Endless batches of `size` augmented samples: (inputs, targets, weights)."""
    while True:
        picks = [sample(rng, examples[int(i)]) for i in rng.integers(0, len(examples), size)]
        inputs, targets, weights = zip(*picks)
        yield np.stack(inputs), np.stack(targets), np.stack(weights)


def build_net():  # pragma: no cover - needs PyTorch
    import torch
    import torch.nn as nn

    def block(cin: int, cout: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class FinderNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # About 110 M multiply-adds on a 320x184 input: 5-6 ms on one core.
            self.to_half = block(3, 16, 2)
            self.quarter = nn.Sequential(block(16, 24, 2), block(24, 24))
            self.eighth = nn.Sequential(block(24, 48, 2), block(48, 48), block(48, 48, dilation=2))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.fuse = nn.Sequential(nn.Conv2d(72, 24, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU(inplace=True), block(24, 24))
            self.head = nn.Conv2d(24, len(CHANNELS), 1)
            nn.init.constant_(self.head.bias, 0.0)
            with torch.no_grad():
                self.head.bias[0] = -2.19  # a 10 % prior for "a die's centre is here"

        def forward(self, x):
            quarter = self.quarter(self.to_half(x))
            eighth = self.eighth(quarter)
            return self.head(self.fuse(torch.cat([quarter, self.up(eighth)], dim=1)))

    return FinderNet()


def loss_terms(out, target, weight):  # pragma: no cover - needs PyTorch
    import torch
    import torch.nn.functional as F

    heat = torch.sigmoid(out[:, 0]).clamp(1e-4, 1 - 1e-4)
    t, w = target[:, 0], weight[:, 0]
    positive = (t >= 0.999).float()
    # CenterNet's focal loss: cells near a centre are penalised less for firing.
    pos_loss = -torch.log(heat) * (1 - heat) ** 2 * positive
    neg_loss = -torch.log(1 - heat) * heat ** 2 * (1 - t) ** 4 * (1 - positive) * w
    n = positive.sum().clamp(min=1.0)
    centre = (pos_loss.sum() + neg_loss.sum()) / n
    reg_w = weight[:, 1:6]
    regress = (F.smooth_l1_loss(out[:, 1:6], target[:, 1:6], reduction="none", beta=0.1) * reg_w).sum() / reg_w[:, 0].sum().clamp(min=1.0)
    cock_w = weight[:, 6] * (1.0 + 4.0 * target[:, 6])
    cocked = (F.binary_cross_entropy_with_logits(out[:, 6], target[:, 6], reduction="none") * cock_w).sum() / weight[:, 6].sum().clamp(min=1.0)
    def classes(channels: slice):
        w = weight[:, channels.start]
        ce = F.cross_entropy(out[:, channels], target[:, channels.start].long(), reduction="none")
        return (ce * w).sum() / w.sum().clamp(min=1.0)

    return centre, regress, cocked, classes(FACE_CHANNELS), classes(IDENTITY_CHANNELS)


def train(examples: Sequence[Example], steps: int, batch_size: int, seed: int, out: Path) -> None:  # pragma: no cover - needs PyTorch
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = build_net()
    optimiser = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=3e-3, total_steps=steps, pct_start=0.1)
    stream = batches(rng, examples, batch_size)
    started = time.monotonic()
    net.train()
    for step in range(steps):
        x, target, weight = (torch.from_numpy(a) for a in next(stream))
        terms = loss_terms(net(x), target, weight)
        loss = sum(terms)
        optimiser_step(optimiser, loss)
        schedule.step()
        if step % 50 == 0 or step == steps - 1:
            log.info("step %d/%d loss %.3f (centre %.3f regress %.3f cocked %.3f colour %.3f identity %.3f) %.0f s", step, steps,
                     float(loss.detach()), *(float(t.detach()) for t in terms), time.monotonic() - started)
    export_onnx(net, (1, 3, 184, INPUT_WIDTH), out, "image", "maps",
                {"image": {2: "height", 3: "width"}, "maps": {2: "rows", 3: "cols"}})


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs PyTorch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("data") / "finder.onnx")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hold-out", nargs="*", default=[], help="setups to leave out (e.g. tossup-s02) for choosing thresholds")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    examples = load_examples(args.fixtures, args.hold_out)
    log.info("%d training pictures, %d dice", len(examples), sum(len(e.dice) for e in examples))
    train(examples, args.steps, args.batch, args.seed, args.out)


if __name__ == "__main__":  # pragma: no cover
    main()
