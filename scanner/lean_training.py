"""Training the lean net (scanner/lean_net.py) from the project's own labelled fixtures.

Run with a Python that has PyTorch and onnx (neither is a dependency of dicetray; the runtime
needs OpenCV only):

    python -m venv .trainenv && .trainenv/bin/pip install torch onnx opencv-python-headless
    .trainenv/bin/python -m scanner.lean_training --out scanner/data/lean_net.onnx
    .trainenv/bin/python -m scanner.lean_training --folds 4   # cross-validation by setup only

It learns from the dev split and the lean set (`fixtures/lean`: a die leaning in almost every
roll) of both games and from the second lean set of Toss Up stills (`fixtures/leanmore`: most
dice lean on another die; git-ignored, rendered by the studio as fixtures/README.md says), never
from the test split, the lean check set or the alternative Tally look, which measure it.
Each die is cut twice: about the centre the scanner reads for it (matched to its label: where
the net will look), and about its labelled centre. Every cut is shown many times turned by any
angle (its position in the frame turned with it), a little shifted and scaled, its colours
swapped and tinted, brightened or darkened, blurred and noisy, so that it learns leaning dice
rather than our dice's colours or our lamps. Leaning dice are few (about one in twelve here):
each epoch shows every one of them eight times beside as many flat dice drawn afresh.
Cutting and augmenting are plain numpy and OpenCV, tested without PyTorch. It learns from both
games' dice (leaning looks alike on both), though only Toss Up dice are judged by it.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from scanner.evaluate import match
from scanner.finder import FinderRules
from scanner.lean_net import CROP_SIDE, crop_around, finder_leaning_at, net_input, position_of
from scanner.training import cosine_rate, export_onnx, labelled_images, missing_folders, optimiser_step

log = logging.getLogger(__name__)

#: (folder under fixtures/, dice set, split) of the pictures it learns from.
SOURCES = (("tossup", "tossup", "dev"), ("tallyup", "tallyup", "dev"),
           ("lean/tossup", "tossup", "lean"), ("lean/tallyup", "tallyup", "lean"),
           ("leanmore/tossup", "tossup", "leanmore"))
#: Each leaning die is shown this many times an epoch, beside as many flat dice.
LEANING_REPEATS = 8


@dataclass(frozen=True)
class LeanExamples:
    """Crops (N x CROP_SIDE x CROP_SIDE x 3 uint8), positions (N x 3), leaning (N bools), the
    setup each came from (for cross-validation by setup), whether it was cut about the
    scanner's centre (N bools; else about the label's) and, for those, the die finder's own
    chance that the die leans there (N floats; 0 for the label's cuts)."""

    crops: np.ndarray
    positions: np.ndarray
    leaning: np.ndarray
    setups: np.ndarray
    by_scanner: np.ndarray
    finder_leaning: np.ndarray


def load_lean_examples(fixtures: Path, sources: Sequence[tuple[str, str, str]] = SOURCES) -> LeanExamples:
    """Every labelled die of the sources, cut about the scanner's centre (when it found the die)
    and about its labelled centre."""
    from scanner.reader import Scanner  # the scanner reads the photos; the net must not judge them

    scanners: dict[str, Scanner] = {}
    crops, positions, leaning, setups, by_scanner, finder_leaning = [], [], [], [], [], []
    for folder, dice_set, split in sources:
        scanner = scanners.setdefault(dice_set, Scanner(dice_set=dice_set, use_lean_net=False))
        for photo, image in labelled_images(fixtures / folder, split, lambda photo: bool(photo.dice)):
            frame = (image.shape[1], image.shape[0])
            setup = photo.image.stem.rsplit("-r", 1)[0]
            readings = scanner.read(image)
            found = scanner.finder.find(image) if scanner.finder is not None else []
            cuts = [(readings[ri].center, readings[ri].size, photo.dice[li].cocked,
                     finder_leaning_at(found, readings[ri], scanner.finder_rules))
                    for li, ri in match(photo.dice, readings)]
            cuts += [(die.center, die.size, die.cocked, None) for die in photo.dice]
            for center, side, cocked, by_finder in cuts:
                crops.append(crop_around(image, center, side))
                positions.append(position_of(center, side, frame))
                leaning.append(cocked)
                setups.append(setup)
                by_scanner.append(by_finder is not None)
                finder_leaning.append(by_finder or 0.0)
    return LeanExamples(np.array(crops, np.uint8).reshape(-1, CROP_SIDE, CROP_SIDE, 3), np.float32(positions).reshape(-1, 3),
                        np.array(leaning, bool), np.array(setups, str), np.array(by_scanner, bool),
                        np.float32(finder_leaning))


def augmented(rng: np.random.Generator, crop: np.ndarray, position: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(crop, position) as another camera and lamp might show the die: turned by any angle
    about its centre with its offset in the frame turned alike, shifted up to 3 pixels and
    scaled 0.9-1.12 (the scanner's centre and size are never exact), colours swapped, tinted,
    brightened or darkened, blurred and noisy."""
    angle = float(rng.uniform(-180.0, 180.0))
    matrix = cv2.getRotationMatrix2D((CROP_SIDE / 2.0, CROP_SIDE / 2.0), angle, float(rng.uniform(0.9, 1.12)))
    matrix[:, 2] += rng.uniform(-3.0, 3.0, 2)
    image = cv2.warpAffine(crop, matrix, (CROP_SIDE, CROP_SIDE), borderMode=cv2.BORDER_REFLECT).astype(np.float32)
    # getRotationMatrix2D turns counter-clockwise on the screen (y down): the offset turns alike.
    turn = math.radians(-angle)
    dx, dy, size = (float(v) for v in position)
    turned = np.float32([dx * math.cos(turn) - dy * math.sin(turn), dx * math.sin(turn) + dy * math.cos(turn), size])
    if rng.random() < 0.5:
        image = image[:, :, rng.permutation(3)]
    image = image * rng.uniform(0.6, 1.3, 3).astype(np.float32) * float(rng.uniform(0.5, 1.4))
    if rng.random() < 0.3:
        image = cv2.GaussianBlur(image, (0, 0), float(rng.uniform(0.3, 1.2)))
    image = image + rng.normal(0.0, float(rng.uniform(0.0, 6.0)), image.shape).astype(np.float32)
    return np.clip(image, 0, 255).astype(np.uint8), turned


def epoch_batch(rng: np.random.Generator, examples: LeanExamples, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(net inputs, 0/1 targets) of one epoch over the `chosen` examples: each leaning die
    LEANING_REPEATS times, as many flat dice drawn afresh, all augmented, shuffled."""
    leaning = chosen[examples.leaning[chosen]]
    flat = chosen[~examples.leaning[chosen]]
    picks = np.concatenate([np.repeat(leaning, LEANING_REPEATS),
                            rng.choice(flat, min(len(flat), LEANING_REPEATS * len(leaning)), replace=False)])
    rng.shuffle(picks)
    pairs = [augmented(rng, examples.crops[i], examples.positions[i]) for i in picks]
    inputs = net_input(np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))
    return inputs, examples.leaning[picks].astype(np.float32)


def build_net():  # pragma: no cover - needs PyTorch
    import torch.nn as nn

    def block(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    # About 6 M multiply-adds a die: a frame's ten dice in about 2.5 ms on one core here.
    return nn.Sequential(block(6, 16, 2), block(16, 24, 2), block(24, 32, 2), block(32, 48, 2), block(48, 64, 2),
                         block(64, 96), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(96, 1))


def train(examples: LeanExamples, chosen: np.ndarray, epochs: int, seed: int):  # pragma: no cover - needs PyTorch
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = build_net()
    optimiser = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    started = time.monotonic()
    for epoch in range(epochs):
        x, y = (torch.from_numpy(a) for a in epoch_batch(rng, examples, chosen))
        net.train()
        total = 0.0
        for start in range(0, len(y), 64):
            loss = F.binary_cross_entropy_with_logits(net(x[start:start + 64])[:, 0], y[start:start + 64])
            optimiser_step(optimiser, loss)
            total += float(loss.detach()) * len(y[start:start + 64])
        cosine_rate(optimiser, 2e-3, epoch, epochs)
        log.info("epoch %d/%d loss %.3f (%.0f s)", epoch + 1, epochs, total / len(y), time.monotonic() - started)
    return net


def predict(net, examples: LeanExamples, chosen: np.ndarray) -> np.ndarray:  # pragma: no cover - needs PyTorch
    import torch

    net.eval()
    with torch.no_grad():
        logits = net(torch.from_numpy(net_input(examples.crops[chosen], examples.positions[chosen])))[:, 0]
    return torch.sigmoid(logits).numpy()


def cross_validate(examples: LeanExamples, folds: int, epochs: int, seed: int) -> None:  # pragma: no cover - needs PyTorch
    """Train `folds` nets, each without a share of the setups, and log how they judge the
    setups they never saw, per game, on the dice as the scanner found them: leaning dice
    flagged and flat dice flagged, at a few thresholds."""
    setups = np.unique(examples.setups)
    np.random.default_rng(seed).shuffle(setups)
    chances = np.zeros(len(examples.leaning), np.float32)
    for fold, held in enumerate(np.array_split(setups, folds)):
        out = np.isin(examples.setups, held)
        net = train(examples, np.flatnonzero(~out), epochs, seed)
        chances[out] = predict(net, examples, np.flatnonzero(out))
        log.info("fold %d/%d done", fold + 1, folds)
    for game in ("tossup", "tallyup"):
        chosen = examples.by_scanner & (np.char.find(examples.setups, game) >= 0)
        leaning, flat = chosen & examples.leaning, chosen & ~examples.leaning
        for finder in (0.0, 0.3, FinderRules().cocked):
            for threshold in (0.5, 0.7, 0.9, 0.95, 0.98):
                flagged = (chances >= threshold) & (examples.finder_leaning >= finder)
                log.info("%s at %.2f, the finder at %.2f: leaning flagged %d of %d, flat flagged %d of %d", game,
                         threshold, finder, int(flagged[leaning].sum()), int(leaning.sum()), int(flagged[flat].sum()),
                         int(flat.sum()))


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs PyTorch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("data") / "lean_net.onnx")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=0, help="cross-validate by setup instead of training the net to ship")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    missing = missing_folders(args.fixtures, [folder for folder, _, _ in SOURCES])
    if missing:
        parser.error(missing)
    examples = load_lean_examples(args.fixtures)
    log.info("%d cuts, %d of them leaning, from %d setups", len(examples.leaning), int(examples.leaning.sum()),
             len(np.unique(examples.setups)))
    if args.folds:
        cross_validate(examples, args.folds, args.epochs, args.seed)
        return
    net = train(examples, np.arange(len(examples.leaning)), args.epochs, args.seed)
    export_onnx(net, (1, 6, CROP_SIDE, CROP_SIDE), args.out, "crop", "leaning", {"crop": {0: "dice"}, "leaning": {0: "dice"}})


if __name__ == "__main__":  # pragma: no cover
    main()
