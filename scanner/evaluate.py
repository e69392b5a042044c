"""Accuracy of readings against labels: matching, counts and the figures the bench prints."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Callable, Iterable, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading
from scanner.labels import LabelledDie, LabelledPhoto

#: A reading matches a labelled die when its centre lies within this many top-face sizes.
MATCH_RADIUS = 0.5


def match(labels: Sequence[LabelledDie], readings: Sequence[DieReading]) -> list[tuple[int, int]]:
    """Pairs (label index, reading index), closest first, each used once."""
    pairs = sorted(
        (math.dist(label.center, reading.center), li, ri)
        for li, label in enumerate(labels)
        for ri, reading in enumerate(readings)
        if math.dist(label.center, reading.center) <= MATCH_RADIUS * max(label.size, 1.0)
    )
    used_labels: set[int] = set()
    used_readings: set[int] = set()
    result = []
    for _, li, ri in pairs:
        if li not in used_labels and ri not in used_readings:
            used_labels.add(li)
            used_readings.add(ri)
            result.append((li, ri))
    return result


def _at(point: tuple[float, float]) -> str:
    """A point in a failure's message: pixels to a tenth."""
    return f"({point[0]:.1f}, {point[1]:.1f})"


@dataclass
class Scorecard:
    """Running totals over many labelled photos."""

    labelled: int = 0
    flat_labelled: int = 0  # labelled dice that lie flat, found or not
    found: int = 0
    matched: int = 0
    faces_total: int = 0  # non-cocked matched dice whose face is scored
    faces_right: int = 0
    identity_total: int = 0
    identity_right: int = 0
    unsure: int = 0
    wrong_confident: int = 0
    #: Of wrong_confident: Tally dice read away from their top face (on a side face, a
    #: neighbour's square) with a face not the one on top. Each Tally die is one of a kind, so
    #: such a reading still scores that die for the player: a wrong score, not only a miss.
    wrong_off_top: int = 0
    cocked_total: int = 0
    cocked_flagged: int = 0
    #: Cocked dice read as lying flat, with a face: the player would be scored a die the
    #: rules say to roll again (a Tally die read off its top face counts too).
    cocked_scored: int = 0
    #: Of cocked_scored: read as another die or face than the one on top. A Tally die leaning at
    #: 20-30 degrees shows a side face nearly as large as its top, and its print may be read
    #: there: a wrong score, where the others score the face on top (the rules still say roll
    #: again).
    cocked_scored_other_face: int = 0
    false_cocked: int = 0
    confusion: Counter = field(default_factory=Counter)  # (true face, read face) -> count
    failures: list[str] = field(default_factory=list)

    def add(self, name: str, labels: Sequence[LabelledDie], readings: Sequence[DieReading], read_faces: bool = True) -> None:
        self.labelled += len(labels)
        self.flat_labelled += sum(not label.cocked for label in labels)
        self.found += len(readings)
        pairs = match(labels, readings)
        self.matched += len(pairs)
        if len(pairs) < len(labels):
            self.failures.append(f"{name}: {len(labels) - len(pairs)} die/dice not found")
        if len(pairs) < len(readings):
            self.failures.append(f"{name}: {len(readings) - len(pairs)} false detection(s)")
        for li, ri in pairs:
            label, reading = labels[li], readings[ri]
            if label.cocked:
                self.cocked_total += 1
                self.cocked_flagged += reading.cocked
                self._count_cocked_scored(name, label, reading)
                continue
            self.false_cocked += reading.cocked
            if not read_faces:
                continue
            if label.die != "tossup":
                self.identity_total += 1
                self.identity_right += reading.die == label.die
            self.faces_total += 1
            face = reading.face if reading.die == label.die else UNSURE if reading.face == UNSURE else f"{reading.die}:{reading.face}"
            self.confusion[(label.face, face)] += 1
            if face == label.face:
                self.faces_right += 1
            elif face == UNSURE:
                self.unsure += 1
                named = "unnamed" if reading.die in (None, UNSURE) else f"named {reading.die}"
                self.failures.append(f"{name}: {label.die} {label.face} left unsure ({named}, face {reading.face}) "
                                     f"at {_at(label.center)}")
            else:
                self.wrong_confident += 1
                self.failures.append(f"{name}: {label.die} {label.face} read as {reading.die} {reading.face} at {_at(label.center)}")
        self._count_off_top(name, labels, readings, pairs)

    def _count_off_top(self, name: str, labels: Sequence[LabelledDie], readings: Sequence[DieReading],
                       pairs: Sequence[tuple[int, int]]) -> None:
        matched_labels = {li for li, _ in pairs}
        matched_readings = {ri for _, ri in pairs}
        missed = {label.die: label for li, label in enumerate(labels) if li not in matched_labels and label.die != "tossup"}
        for ri, reading in enumerate(readings):
            if ri in matched_readings or reading.face in (None, UNSURE):
                continue
            label = missed.get(reading.die or "")
            if label is not None and label.cocked:
                self._count_cocked_scored(name, label, reading)
            elif label is not None and reading.face != label.face:
                self.wrong_confident += 1
                self.wrong_off_top += 1
                self.failures.append(f"{name}: {label.die} {label.face} read as {reading.die} {reading.face} "
                                     f"at {_at(reading.center)}, off its top face at {_at(label.center)}")

    def _count_cocked_scored(self, name: str, label: LabelledDie, reading: DieReading) -> None:
        if not reading.cocked and reading.face not in (None, UNSURE):
            self.cocked_scored += 1
            other_die = reading.die != label.die
            self.cocked_scored_other_face += other_die or reading.face != label.face
            read = f"{reading.die} {reading.face}" if other_die else reading.face
            on_top = (f" (on top: {label.die} {label.face})" if other_die
                      else f" (on top: {label.face})" if reading.face != label.face else "")
            self.failures.append(f"{name}: cocked {label.die} read as lying flat, {read}{on_top}, at {_at(reading.center)}")

    @classmethod
    def merged(cls, cards: Iterable[Scorecard]) -> Scorecard:
        """One scorecard holding the counts of several."""
        whole = cls()
        for card in cards:
            for item in fields(cls):
                value = getattr(card, item.name)
                if isinstance(value, int):
                    setattr(whole, item.name, getattr(whole, item.name) + value)
            whole.confusion.update(card.confusion)
            whole.failures.extend(card.failures)
        return whole

    @staticmethod
    def _rate(part: int, whole: int) -> float:
        return part / whole if whole else float("nan")

    def summary(self) -> dict[str, float | int]:
        return {
            "labelled_dice": self.labelled,
            "detection_recall": self._rate(self.matched, self.labelled),
            "detection_precision": self._rate(self.matched, self.found),
            "face_accuracy": self._rate(self.faces_right, self.faces_total),
            # Of every flat die in the photos, found or not: what a player is spared typing.
            "read_right_of_all": self._rate(self.faces_right, self.flat_labelled) if self.faces_total else float("nan"),
            "identity_accuracy": self._rate(self.identity_right, self.identity_total),
            "unsure_rate": self._rate(self.unsure, self.faces_total),
            # Counts the dice read off their top face too (wrong_off_top); the whole stays the
            # dice found where they lie, so that figures of older runs compare.
            "wrong_confident_rate": self._rate(self.wrong_confident, self.faces_total),
            "wrong_off_top": self.wrong_off_top,
            "cocked_recall": self._rate(self.cocked_flagged, self.cocked_total),
            "cocked_false_alarms": self.false_cocked,
            "cocked_dice": self.cocked_total,
            "cocked_scored": self.cocked_scored,
            "cocked_scored_other_face": self.cocked_scored_other_face,
            "cocked_labelled": self.labelled - self.flat_labelled,
        }

    def confusion_table(self) -> str:
        truths = sorted({t for t, _ in self.confusion})
        reads = sorted({r for _, r in self.confusion})
        width = max([len(x) for x in truths + reads] + [6]) + 1
        lines = ["true \\ read".ljust(width) + "".join(r.rjust(width) for r in reads)]
        for truth in truths:
            lines.append(truth.ljust(width) + "".join(str(self.confusion[(truth, r)]).rjust(width) for r in reads))
        return "\n".join(lines)


def score_photos(read: Callable[[np.ndarray], Sequence[DieReading]], photos: Iterable[LabelledPhoto]) -> Scorecard:
    """Read every labelled photo from disk with `read` and score the readings against its labels.

    Raises ValueError naming a photo that cannot be read.
    """
    card = Scorecard()
    for photo in photos:
        card.add(photo.image.name, photo.dice, read(read_photo(photo)))
    return card


def read_photo(photo: LabelledPhoto) -> np.ndarray:
    """A labelled photo's picture (BGR); ValueError naming a photo that cannot be read."""
    image = cv2.imread(str(photo.image), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"cannot read {photo.image}")
    return image


def failure_lines(failures: Sequence[str], limit: int) -> list[str]:
    """A bench's failures as it lists them: the first `limit` as items, then how many more."""
    lines = [f"- {failure}" for failure in failures[:limit]]
    if len(failures) > limit:
        lines.append(f"... and {len(failures) - limit} more")
    return lines


def _through_width(width: int) -> Callable[[np.ndarray], np.ndarray]:
    def resample(image: np.ndarray) -> np.ndarray:
        height = round(image.shape[0] * width / image.shape[1])
        down = cv2.INTER_AREA if width < image.shape[1] else cv2.INTER_CUBIC
        through = cv2.resize(image, (width, height), interpolation=down)
        up = cv2.INTER_CUBIC if width < image.shape[1] else cv2.INTER_AREA
        return cv2.resize(through, (image.shape[1], image.shape[0]), interpolation=up)
    return resample


def _jpeg(quality: int) -> Callable[[np.ndarray], np.ndarray]:
    def compress(image: np.ndarray) -> np.ndarray:
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
        assert ok, "OpenCV cannot encode JPEG"
        return cv2.imdecode(data, cv2.IMREAD_COLOR)
    return compress


def _gamma(gamma: float) -> Callable[[np.ndarray], np.ndarray]:
    table = np.clip(((np.arange(256) / 255.0) ** gamma) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return lambda image: cv2.LUT(image, table)


def _blur(sigma: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda image: cv2.GaussianBlur(image, (0, 0), sigma)


def _noise(sigma: float, quality: int) -> Callable[[np.ndarray], np.ndarray]:
    encode = _jpeg(quality)

    def noisy(image: np.ndarray) -> np.ndarray:
        # The same noise for the same frame size: a perturbed photo reads the same every time.
        grain = np.random.default_rng(0).normal(0.0, sigma, image.shape).astype(np.float32)
        return encode(cv2.add(image, grain, dtype=cv2.CV_8U))
    return noisy


#: The same photos as other cameras would take them, at the same frame size (so the labels
#: still hold): another sensor's resolution scaled to ours, a stronger JPEG, a brighter tone
#: curve, a softer lens, the grain of a sensor's high gain in a dim room (then JPEG, as the
#: camera encodes it). The fixtures' exact pixels are what the readers were tuned on; a
#: reading that changes under such small differences would change on a real camera too.
PERTURBATIONS: tuple[tuple[str, Callable[[np.ndarray], np.ndarray]], ...] = (
    ("via 1920 px", _through_width(1920)),
    ("via 640 px", _through_width(640)),
    ("JPEG q60", _jpeg(60)),
    ("gamma 0.8", _gamma(0.8)),
    ("blur 0.7 px", _blur(0.7)),
    ("noise 6, JPEG q90", _noise(6.0, 90)),
)


def score_perturbed(read: Callable[[np.ndarray], Sequence[DieReading]], photos: Iterable[LabelledPhoto]
                    ) -> dict[str, Scorecard]:
    """Per change of PERTURBATIONS, the score of every labelled photo read after that change.
    A photo that cannot be read is skipped (the plain pass, `score_photos`, names it)."""
    cards = {change: Scorecard() for change, _ in PERTURBATIONS}
    for photo in photos:
        image = cv2.imread(str(photo.image), cv2.IMREAD_COLOR)
        if image is None:
            continue
        for change, perturb in PERTURBATIONS:
            cards[change].add(photo.image.name, photo.dice, read(perturb(image)))
    return cards


def percentile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
