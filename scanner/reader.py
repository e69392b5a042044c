"""The scanner: one object that turns a frame into die readings for a chosen dice set."""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import cv2
import numpy as np

from scanner.face_net import FaceNet
from scanner.finder import DieFinder, FinderRules, FoundDie, complete_tossup, find_in_shade
from scanner.frames import DieReading
from scanner.lean_net import LeanNet, finder_leaning_at, may_lean
from scanner.profile import load_profile
from scanner.shade import Brightness, lifted_around, marked_unread
from scanner.tally import TallyReader
from scanner.tally_model import TallyModel, default_model
from scanner.top_face import TopFaceNet
from scanner.tossup import TossUpParams, half_size, illuminant, read_tossup, rim_colour, work_scale
from scanner.tray import drop_empty_look, keep_in_tray

log = logging.getLogger(__name__)

DICE_SETS = ("tossup", "tallyup", "any")


@dataclass
class Scanner:
    """Reads one dice set. `read` is safe to call from one thread at a time."""

    dice_set: str
    tossup: TossUpParams = field(default_factory=TossUpParams)
    profile: dict[str, Any] = field(default_factory=dict)
    #: The learned look of the Tally Up set; None = the built-in one (scanner/data).
    tally: TallyModel | None = None
    #: From a calibration profile: the tray's corners (dice outside it, like set-aside Toss Up
    #: greens, are not in the roll), the typical die size, and the frame size both refer to.
    tray: tuple[tuple[float, float], ...] | None = None
    die_size: float | None = None
    frame_size: tuple[int, int] | None = None
    #: From a calibration profile: per channel (B, G, R), the stray room light that lifts every
    #: pixel of this table's pictures (measured on the empty tray); taken off before reading.
    black_level: tuple[float, float, float] | None = None
    #: From a calibration profile: the photo of the empty tray (BGR), taken with this camera
    #: and lamp; readings where a frame still looks like it are the tray, not dice.
    empty_tray: np.ndarray | None = field(default=None, repr=False)
    #: From a calibration profile: per channel (B, G, R), how much to brighten this table's
    #: pictures (after the black level) so that a dim lamp's white comes near full scale, as a
    #: camera's own exposure would. None = as they come.
    light_gains: tuple[float, float, float] | None = None
    #: The learned die finder that adds the dice the hand-written readers missed; None = the
    #: built-in net (scanner/data/finder.onnx), unless use_finder is off. Not used with "any".
    finder: DieFinder | None = field(default=None, repr=False)
    use_finder: bool = True
    finder_rules: FinderRules = field(default_factory=FinderRules)
    #: The face net that reads Tally prints beside the templates; None = the built-in one
    #: (scanner/data/face_net.onnx), unless use_face_net is off.
    face_net: FaceNet | None = field(default=None, repr=False)
    use_face_net: bool = True
    #: The lean net that flags Toss Up dice the reader took for flat but that lean on the wall
    #: or on another die; None = the built-in one (scanner/data/lean_net.onnx), unless
    #: use_lean_net is off. Toss Up only (see scanner/lean_net.py), with the finder.
    lean_net: LeanNet | None = field(default=None, repr=False)
    use_lean_net: bool = True
    #: The top-face locator that places the square of a Tally face left unsure; None = the
    #: built-in one (scanner/data/top_face.onnx), unless use_top_face is off.
    top_face: TopFaceNet | None = field(default=None, repr=False)
    use_top_face: bool = True

    def __post_init__(self) -> None:
        if self.dice_set not in DICE_SETS:
            raise ValueError(f"unknown dice set {self.dice_set!r}; expected one of {list(DICE_SETS)}")
        if not self.use_finder or self.dice_set == "any":
            self.finder = None
        elif self.finder is None:
            self.finder = DieFinder()
        self._tally_reader: TallyReader | None = None
        if not self.use_lean_net or self.dice_set != "tossup" or self.finder is None:
            self.lean_net = None
        elif self.lean_net is None:
            self.lean_net = LeanNet()
        self._empty_tray_cleaned = None if self.empty_tray is None else self._cleaned(self.empty_tray)
        if self.dice_set != "tallyup" or not self.use_face_net:
            self.face_net = None  # only Tally faces use it ("any" reads no faces)
        elif self.face_net is None:
            self.face_net = FaceNet()
        if self.dice_set != "tallyup" or not self.use_top_face:
            self.top_face = None  # only Tally faces are placed by it
        elif self.top_face is None:
            self.top_face = TopFaceNet()
        if self.dice_set in ("tallyup", "any"):
            self._tally_reader = TallyReader(self.tally or default_model(), finder=self.finder,
                                             finder_rules=self.finder_rules, face_net=self.face_net,
                                             top_face=self.top_face)

    def print_lost_to_glare(self, die: str) -> bool:
        """Whether glare that blows out `die`'s top face leaves no print to read: true of a
        Toss Up die's coloured inset and of a Tally die whose print is lighter than its body
        (or not learned); false of a dark print on a white body (the built-in Up Die)."""
        return self._tally_reader is None or not self._tally_reader.model.dark_print(die)

    def _cleaned(self, image: np.ndarray) -> np.ndarray:
        # Both readers, and the finder, see a dim table's pictures brightened back. Tally Dice
        # under a warm lamp at half the light, calibrated per table as the wizard does it:
        # identity 0.928 -> 0.995 and faces 0.888 -> 0.955 on the dev split, 0.942 -> 0.972 and
        # 0.896 -> 0.929 on the test split (`dicetray bench calibration`). The wizard teaches the
        # Tally look from pictures cleaned the same way.
        return cleaned_picture(image, self.black_level, self.light_gains)

    def read(self, image: np.ndarray) -> Sequence[DieReading]:
        cleaned = self._cleaned(image)
        readings, found = self._read_all(cleaned, self._tossup_params(image))
        readings = keep_in_tray(readings, self.tray, self.die_size, self.frame_size, image.shape)
        # Compared with the stray light off both: it lifts die and tray alike, and so shrinks
        # their difference relative to the brightness.
        readings = drop_empty_look(readings, cleaned, self._empty_tray_cleaned)
        if self.lean_net is not None and found:
            # On the dice kept: the lean net looks again at each one that may lean.
            suspects = may_lean(readings, [finder_leaning_at(found, r, self.finder_rules) for r in readings])
            readings = self.lean_net.flagged(cleaned, readings, suspects)
        # Last: which of the faces left unread lie in the lamp's reflection or a wall's deep
        # shadow, for the player to hear why.
        return marked_unread(cleaned, readings, self.finder_rules.shade_gain, self.finder_rules.shade_dark)

    def _tossup_params(self, image: np.ndarray) -> TossUpParams:
        """The Toss Up parameters for this frame. With a black level taken off, the white
        thresholds (fractions of the lamp's white) are moved to the same pixels as in the
        picture before: taking the stray light off darkens a rim in a wall's shadow, dim
        already, far more than the lamp's white, and it must still count as white."""
        if self.black_level is None or self.dice_set == "tallyup":
            return self.tossup
        white = float(np.max(illuminant(image)))
        level = float(np.mean(self.black_level))
        if white <= level + 1.0:
            return self.tossup

        def moved(fraction: float) -> float:
            return max(0.02, (fraction * white - level) / (white - level))

        params = self.tossup
        return replace(params, white_value=moved(params.white_value), dim_white_value=moved(params.dim_white_value))

    def _read_all(self, image: np.ndarray, tossup: TossUpParams) -> tuple[Sequence[DieReading], Sequence[FoundDie]]:
        """The readings of the frame and, for Toss Up, the dice the finder found in it."""
        if self.dice_set == "tossup":
            # Both readers look at a large frame halved (the same resize): halve it once.
            half = half_size(image) if work_scale(image) > 1.0 else None
            readings = read_tossup(image, tossup, half=half)
            if self.finder is None:
                return readings, ()
            # The lamp is measured once a frame, and only if the finder adds a die.
            lamp = functools.cache(lambda: illuminant(image))
            found = self.finder.find(image, half)
            readings = complete_tossup(readings, found, self.finder_rules,
                                       lambda center, side: rim_colour(image, center, side, tossup, lamp()),
                                       tossup.max_dice)
            if len(readings) < tossup.max_dice:
                readings = self._with_shaded(image, half, readings, found, tossup, lamp)
            return readings, found
        assert self._tally_reader is not None
        if self.dice_set == "tallyup":
            return self._tally_reader.read(image), ()
        found = read_tossup(image, tossup, with_faces=False)
        # Toss Up insets and white bodies also match Tally colours: one die, one reading. Two
        # dice lie at least a side apart; a Tally outline of a Toss Up die (its inset with a
        # side face) may be off its centre by most of a side.
        extra = [d for d in self._tally_reader.read(image, with_faces=False)
                 if all(math.dist(d.center, t.center) > 0.8 * max(d.size, t.size) for t in found)]
        return sorted([*found, *extra], key=lambda d: (d.center[1], d.center[0])), ()

    def _with_shaded(self, image: np.ndarray, half: np.ndarray | None, readings: list[DieReading],
                     seen: Sequence[FoundDie], tossup: TossUpParams, lamp: Callable[[], np.ndarray]) -> list[DieReading]:
        """Toss Up `readings` plus the dice the finder finds in the frame's shade lifted, each
        read against its rim there and dark in the frame as it comes (FinderRules.shade_dark):
        a die in a wall's shadow is too dark for both readers in the frame as it comes. The
        lamp's white stays the frame's: lifting brightens the shade, not the lamp."""
        assert self.finder is not None
        rules = self.finder_rules
        shaded, shade = find_in_shade(self.finder, image, half, rules, seen, [(r.center, r.size) for r in readings])
        if shade is None or not shaded:
            return readings
        bright = lifted_around(image, shade, ((die.center, die.side) for die in shaded))
        more = complete_tossup(readings, shaded, rules, lambda center, side: rim_colour(bright, center, side, tossup, lamp()),
                               tossup.max_dice, read_near=True)
        brightness = Brightness(image)
        added = [d for d in more if not any(d is r for r in readings) and brightness.of(d.corners) <= rules.shade_dark]
        for die in added:
            log.debug("a %s die read in the shade at %s", die.face, die.center)
        return sorted([*readings, *added], key=lambda d: (d.center[1], d.center[0])) if added else readings


def subtract_black_level(image: np.ndarray, level: Sequence[float] | None) -> np.ndarray:
    """The picture with a profile's black level taken off (unchanged without one).

    Coloured room light adds to every pixel alike and washes out the insets; the white-rim
    balance divides out the lamp's colour but cannot undo an added offset.
    """
    if level is None:
        return image
    return cv2.subtract(image, (float(level[0]), float(level[1]), float(level[2]), 0.0))


def cleaned_picture(image: np.ndarray, level: Sequence[float] | None, gains: Sequence[float] | None) -> np.ndarray:
    """A picture as a calibration profile's scanner reads it: the table's stray light (`level`)
    taken off, then a dim lamp brightened back (`gains`); unchanged without either."""
    return brightened(subtract_black_level(image, level), gains)


def brightened(image: np.ndarray, gains: Sequence[float] | None) -> np.ndarray:
    """The picture with each channel (B, G, R) multiplied by a profile's light gains (unchanged without).

    A dim lamp leaves a fixed camera's picture dark and tinted: the white rims balance the
    tint out per frame, but the finder net and the shadows' contrast need the light itself.
    """
    if gains is None:
        return image
    return cv2.transform(image, np.diag(np.asarray(gains, np.float32)))


def load_scanner(dice_set: str, profile_path: Path | None = None) -> Scanner:
    """A scanner for `dice_set`, tuned by a calibration profile when one is given.

    Raises ValueError (a ProfileError) naming the field at fault for a bad profile.
    """
    if profile_path is None:
        return Scanner(dice_set=dice_set)
    profile = load_profile(profile_path)
    empty = None
    if profile.empty_tray is not None:
        empty = cv2.imread(str(Path(profile_path).parent / profile.empty_tray), cv2.IMREAD_COLOR)
        if empty is None:
            log.warning("%s: its empty-tray photo %s cannot be read; scanning without it", profile_path, profile.empty_tray)
    return Scanner(
        dice_set=dice_set, tossup=profile.tossup, profile=profile.to_json(), tally=profile.tallyup,
        tray=profile.tray, die_size=profile.die_size, frame_size=profile.frame_size,
        black_level=profile.black_level, empty_tray=empty, light_gains=profile.light_gains,
    )
