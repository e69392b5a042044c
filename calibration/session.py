"""One run of the calibration wizard: the photos taken, what the user confirmed, what was learned.

Physical setup assumed: the live table's camera looks at the tray; the user stands at the
tablet and follows the six steps. The session never touches the camera itself: the web layer
hands it frames taken from the live table's camera thread (the one owner of the camera) and
the exposure lock's result. One session per app, kept on the app (`app.extensions`).
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import cv2
import numpy as np

from calibration.library import ProfileLibrary, check_name
from scanner.profile import Profile
from calibration.steps import (
    CheckResult, ConfirmedDie, Coverage, Framing, Quad, TossUpLearned, TrayFit, check, check_die, check_quad, crease_levels,
    find_tray, framing, grow_tray, learn_tossup, readings_json, shadow_levels, square_at, stray_light, tally_coverage,
)
from scanner.face_net import FaceNet
from scanner.finder import DieFinder
from scanner.frames import DieReading
from scanner.reader import Scanner, cleaned_picture
from scanner.shade import marked_unread
from scanner.tally import TallyReader
from scanner.tally_model import TallyModel, default_model
from scanner.top_face import TopFaceNet
from scanner.tossup import TossUpParams

log = logging.getLogger(__name__)

STEPS = ("camera", "empty", "exposure", "tossup", "tallyup", "check")
#: Photos kept for the page beyond the ones that matter (the empty tray, confirmed rolls).
KEEP_SHOTS = 12
NOT_CONTROLLABLE = "this camera cannot be controlled; exposure is left as it is"


class CalibrationError(ValueError):
    """A wizard request that cannot be done now; `status` is the HTTP code to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Shot:
    """One photo the wizard took, what was read in it and (once confirmed) what it shows."""

    id: str
    kind: str  # "camera", "empty", "tossup" or "tallyup"
    jpeg: bytes
    size: tuple[int, int]  # (width, height)
    readings: tuple[DieReading, ...] = ()
    confirmed: tuple[ConfirmedDie, ...] | None = None
    #: A roll's darkest levels (steps.crease_levels), measured on the camera's picture, not the JPEG.
    creases: tuple[float, ...] | None = None

    def image(self) -> np.ndarray:
        return cv2.imdecode(np.frombuffer(self.jpeg, np.uint8), cv2.IMREAD_COLOR)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "url": f"/api/calibrate/shots/{self.id}.jpg",
                "width": self.size[0], "height": self.size[1], "dice": readings_json(self.readings),
                "confirmed": [d.to_json() for d in self.confirmed] if self.confirmed is not None else None}


def _now() -> str:
    return datetime.now(tz=timezone.utc).isoformat(timespec="seconds")


class CalibrationSession:
    """The wizard's state; every method is safe to call from any request thread."""

    def __init__(self, name: str, base: Profile | None = None, need: int = 3, finder: DieFinder | None = None,
                 face_net: FaceNet | None = None, top_face: TopFaceNet | None = None) -> None:
        self.name = check_name(name)
        #: The die finder, the face net and the top-face locator every roll and the check are
        #: read with, as the scanner reads them (the face net also teaches the Tally Dice);
        #: None = the built-in nets, loaded when first needed.
        self._finder = finder
        self._face_net = face_net
        self._top_face = top_face
        self.base = base or Profile(name=name)
        self.need = need
        self._lock = threading.RLock()
        self._shots: OrderedDict[str, Shot] = OrderedDict()
        self.framing: Framing | None = None
        self.empty_id: str | None = None
        self.found: TrayFit | None = None
        self.tray: Quad | None = None
        self.tray_adjusted = False
        self.black_level: tuple[float, float, float] | None = None
        self._empty_shadows: np.ndarray | None = None  # steps.shadow_levels of the empty tray
        self.exposure: dict[str, Any] | None = None
        self.learned: TossUpLearned | None = None
        self.tally_model: TallyModel | None = None
        self.teach_notes: list[str] = []
        self.result: CheckResult | None = None
        self.saved: str | None = None
        self._tally_reader: tuple[TallyModel, TallyReader] | None = None

    # -- photos -----------------------------------------------------------------------------

    def _add_shot(self, kind: str, image: np.ndarray, readings: Sequence[DieReading] = ()) -> Shot:
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])
        if not ok:
            raise CalibrationError("could not encode the photo", 500)
        creases = tuple(float(v) for v in crease_levels(image)) if kind == "tossup" else None
        shot = Shot(secrets.token_hex(8), kind, data.tobytes(), (int(image.shape[1]), int(image.shape[0])),
                    tuple(readings), creases=creases)
        with self._lock:
            self._shots[shot.id] = shot
            # Forget old unconfirmed photos; the empty tray and confirmed rolls are the calibration.
            spare = [k for k, s in self._shots.items() if s.confirmed is None and k != self.empty_id]
            for key in spare[:-KEEP_SHOTS]:
                del self._shots[key]
        return shot

    def jpeg(self, shot_id: str) -> bytes | None:
        with self._lock:
            shot = self._shots.get(shot_id)
        return shot.jpeg if shot else None

    def _confirmed(self, kind: str) -> list[Shot]:
        with self._lock:
            return [s for s in self._shots.values() if s.kind == kind and s.confirmed is not None]

    # -- step 1: camera check ---------------------------------------------------------------

    def camera_check(self, image: np.ndarray) -> dict[str, Any]:
        result = framing(image, self.tray)
        shot = self._add_shot("camera", image)
        with self._lock:
            self.framing = result
        return {"framing": result.to_json(), "shot": shot.to_json()}

    # -- step 2: empty tray -----------------------------------------------------------------

    def capture_empty(self, image: np.ndarray) -> dict[str, Any]:
        found = find_tray(image)
        shadows = shadow_levels(image)
        black = stray_light(shadows)
        shot = self._add_shot("empty", image)
        with self._lock:
            self.empty_id = shot.id
            self._empty_shadows = shadows
            self.found = found
            self.black_level = black
            self.tray = found.quad if found else None
            self.tray_adjusted = False
            # A new tray (or a moved camera) makes everything learned against the old one stale.
            self.learned = None
            self.result = None
        note = None if found else "no tray found: drag the four corners onto the tray's inner edges"
        if found is None:
            w, h = shot.size
            self.tray = ((0.1 * w, 0.1 * h), (0.9 * w, 0.1 * h), (0.9 * w, 0.9 * h), (0.1 * w, 0.9 * h))
        return {"shot": shot.to_json(), "tray": [list(p) for p in self.tray], "found": found is not None,
                "black_level": list(black),
                "cut_off": list(found.cut_off) if found else [], "note": note}

    def set_tray(self, corners: Any) -> dict[str, Any]:
        with self._lock:
            if self.empty_id is None:
                raise CalibrationError("photograph the empty tray first (step 2)", 409)
            size = self._shots[self.empty_id].size
        try:
            quad = check_quad(corners, size)
        except ValueError as error:
            raise CalibrationError(str(error)) from error
        with self._lock:
            self.tray = quad
            self.tray_adjusted = True
            self.result = None
        return {"tray": [list(p) for p in quad]}

    # -- step 3: exposure -------------------------------------------------------------------

    def set_exposure(self, result: dict[str, Any]) -> dict[str, Any]:
        shown = dict(result)
        if not shown.get("locked"):
            shown.setdefault("note", NOT_CONTROLLABLE)
        with self._lock:
            self.exposure = shown
        return {"exposure": shown}

    # -- steps 4 and 5: rolls ---------------------------------------------------------------

    def tossup_params(self) -> TossUpParams:
        """What the Toss Up rolls are read with: learned ones once a roll was confirmed."""
        with self._lock:
            return self.learned.params if self.learned else self.base.tossup

    def finder(self) -> DieFinder:
        with self._lock:
            if self._finder is None:
                self._finder = DieFinder()
            return self._finder

    def face_net(self) -> FaceNet:
        with self._lock:
            if self._face_net is None:
                self._face_net = FaceNet()
            return self._face_net

    def top_face(self) -> TopFaceNet:
        with self._lock:
            if self._top_face is None:
                self._top_face = TopFaceNet()
            return self._top_face

    def _tally(self) -> TallyReader:
        model = self.tally_model or self.base.tallyup or default_model()
        finder, face_net, top_face = self.finder(), self.face_net(), self.top_face()
        with self._lock:
            if self._tally_reader is None or self._tally_reader[0] is not model:
                self._tally_reader = (model, TallyReader(model, finder=finder, face_net=face_net, top_face=top_face))
            return self._tally_reader[1]

    def capture_roll(self, image: np.ndarray, dice_set: str) -> dict[str, Any]:
        if dice_set not in ("tossup", "tallyup"):
            raise CalibrationError(f"'dice' must be \"tossup\" or \"tallyup\", got {dice_set!r}")
        # Read as the saved profile's scanner will: without this table's stray light (for Toss
        # Up also with the white thresholds moved as the scanner moves them).
        if dice_set == "tossup":
            readings = list(Scanner("tossup", tossup=self.tossup_params(), black_level=self._black_level(),
                                    light_gains=self._light_gains(), finder=self.finder()).read(image))
        else:
            cleaned, reader = self._cleaned(image), self._tally()
            readings = marked_unread(cleaned, reader.read(cleaned), reader.finder_rules.shade_gain,
                                     reader.finder_rules.shade_dark)
        # Not cut to the tray yet: the tray found in the empty photo may be a little small, and
        # the user sees (and can drop) anything read outside it.
        shot = self._add_shot(dice_set, image, readings)
        return {"shot": shot.to_json()}

    def confirm(self, shot_id: Any, dice: Any) -> dict[str, Any]:
        """The user's word on a roll: every die in it, with its face (corrected where needed)."""
        with self._lock:
            shot = self._shots.get(shot_id) if isinstance(shot_id, str) else None
        if shot is None or shot.kind not in ("tossup", "tallyup"):
            raise CalibrationError("no such roll photo (take the photo again)", 404)
        confirmed = self._parse_dice(dice, shot)
        if shot.kind == "tossup" and any(d.die != "tossup" for d in confirmed):
            raise CalibrationError("this is the Toss Up step: every die is a tossup die")
        if shot.kind == "tallyup" and any(d.die == "tossup" for d in confirmed):
            raise CalibrationError("this is the Tally step: name each die by its colour (red ... purple, up)")
        with self._lock:
            shot.confirmed = tuple(confirmed)
            self.result = None
            empty = self._shots.get(self.empty_id) if self.empty_id else None
            if self.tray is not None and empty is not None and empty.size == shot.size:
                # Dice the user confirmed lie in the tray: a tray found too small grows to hold them.
                size = float(np.median([d.size for d in confirmed]))
                self.tray = grow_tray(self.tray, [d.center for d in confirmed], 0.6 * size)
        if shot.kind == "tossup":
            self._measure_black_level()
            return {"shot": shot.to_json(), "learned": self._learn_tossup().to_json(), "tray": self._tray_json()}
        return {"shot": shot.to_json(), "coverage": self.coverage().to_json()}

    def _measure_black_level(self) -> None:
        """The stray light measured again on the empty tray and the confirmed Toss Up rolls:
        the creases under the dice are darker than anything in a light tray. (It is settled
        before the Toss Up reader is learned through it, and the Tally step comes after.)"""
        with self._lock:
            shadows = self._empty_shadows
            if shadows is None:
                return
            size = self._shots[str(self.empty_id)].size
            creases = [s.creases for s in self._shots.values()
                       if s.kind == "tossup" and s.confirmed is not None and s.creases is not None and s.size == size]
            self.black_level = stray_light(shadows, *creases)

    def _parse_dice(self, dice: Any, shot: Shot) -> list[ConfirmedDie]:
        if not isinstance(dice, list) or not 0 < len(dice) <= 30:
            raise CalibrationError("'dice' must be a list of 1 to 30 dice ({\"die\", \"face\", \"center\"} objects)")
        sizes = [d.size for d in shot.readings if d.size > 0]
        typical = float(np.median(sizes)) if sizes else (self.learned.die_size if self.learned else 0.04 * shot.size[0])
        confirmed = []
        for index, item in enumerate(dice):
            if not isinstance(item, dict):
                raise CalibrationError(f"dice[{index}] must be an object with die, face and center")
            unknown = set(item) - {"die", "face", "center", "corners", "index"}
            if unknown:
                raise CalibrationError(f"dice[{index}]: unknown field(s) {sorted(unknown)}")
            die, face = item.get("die"), item.get("face")
            if not isinstance(die, str) or not isinstance(face, str):
                raise CalibrationError(f"dice[{index}] needs 'die' and 'face' as strings")
            try:
                check_die(die, face)
            except ValueError as error:
                raise CalibrationError(f"dice[{index}]: {error}") from error
            source = item.get("index")
            read = shot.readings[source] if isinstance(source, int) and not isinstance(source, bool) \
                and 0 <= source < len(shot.readings) else None
            center = item.get("center", list(read.center) if read else None)
            if not (isinstance(center, list) and len(center) == 2 and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in center)):
                raise CalibrationError(f"dice[{index}]: 'center' must be [x, y] in pixels of the photo")
            x, y = float(center[0]), float(center[1])
            if not (0 <= x < shot.size[0] and 0 <= y < shot.size[1]):
                raise CalibrationError(f"dice[{index}]: center ({x:g}, {y:g}) lies outside the photo")
            corners = item.get("corners")
            if corners is None:
                corners = read.corners if read else square_at((x, y), typical)
            elif not (isinstance(corners, list) and len(corners) == 4 and all(
                    isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                               for v in p) for p in corners)):
                raise CalibrationError(f"dice[{index}]: 'corners' must be four [x, y] points")
            read_as = f"{read.die} {read.face}" if read else None
            confirmed.append(ConfirmedDie(die, face, (x, y), tuple((float(a), float(b)) for a, b in corners), read_as))
        return confirmed

    def _black_level(self) -> tuple[float, float, float] | None:
        """This table's stray light once its empty tray is captured, else the base profile's."""
        return self.black_level if self.empty_id else self.base.black_level

    def _cleaned(self, image: np.ndarray) -> np.ndarray:
        """A Tally picture as the saved profile's scanner will read it (see Scanner._cleaned)."""
        return cleaned_picture(image, self._black_level(), self._light_gains())

    def _light_gains(self) -> tuple[float, float, float] | None:
        """What this table's confirmed Toss Up rolls measured, else the base profile's."""
        with self._lock:
            learned = self.learned
        return learned.gains if learned is not None else self.base.light_gains

    def _learn_tossup(self) -> TossUpLearned:
        shots = self._confirmed("tossup")
        rolls = [(s.image(), s.confirmed or ()) for s in shots]
        with self._lock:
            tray = self.tray
        try:
            learned = learn_tossup(rolls, tray, self.base.tossup, self._black_level())
        except ValueError as error:
            raise CalibrationError(str(error), 409) from error
        with self._lock:
            self.learned = learned
        return learned

    def coverage(self) -> Coverage:
        return tally_coverage((s.confirmed or () for s in self._confirmed("tallyup")), self.need)

    def learn_tally(self) -> dict[str, Any]:
        """Teach the Tally reader the user's dice from the confirmed rolls (as `calibrate teach` does)."""
        from calibration.teach import learn_tally_model  # the heavy part, only when asked

        shots = self._confirmed("tallyup")
        if not shots:
            raise CalibrationError("no confirmed Tally rolls yet: roll the Tally Dice and confirm them", 409)
        # Taught from the pictures as the profile's scanner will read them (stray light off, a
        # dim lamp brightened back): the look learned is the look it will see.
        photos = [(f"roll {i + 1}", self._cleaned(s.image()), tuple(d.labelled() for d in s.confirmed or ()))
                  for i, s in enumerate(shots)]
        try:
            result = learn_tally_model(photos, source=f"calibration wizard ({self.name})", face_net=self.face_net())
        except ValueError as error:
            raise CalibrationError(f"the Tally Dice could not be learned: {error}", 409) from error
        with self._lock:
            self.tally_model = result.model
            self.teach_notes = list(result.problems)
            self.result = None
        return {"coverage": self.coverage().to_json(), "problems": result.problems,
                "too_few": [{"die": d, "face": f, "count": n} for d, f, n in result.too_few()]}

    # -- step 6: check and save ------------------------------------------------------------

    def profile(self) -> Profile:
        with self._lock:
            learned, tray, exposure, result = self.learned, self.tray, self.exposure, self.result
            frame = self._shots[self.empty_id].size if self.empty_id in self._shots else None
        camera = dict(self.base.camera)
        if exposure is not None:
            camera["exposure"] = exposure
        if learned is not None:
            camera["tossup_chroma"] = learned.chroma
        if result is not None:
            checked = result.to_json()
            camera["check"] = {"verdict": result.verdict, "light": checked["light"], **checked["summary"]}
        return replace(
            self.base, name=self.name, created=_now(), tray=tray,
            die_size=learned.die_size if learned else self.base.die_size,
            frame_size=learned.frame_size if learned else frame or self.base.frame_size,
            empty_tray=f"{self.name}-empty.jpg" if self.empty_id else self.base.empty_tray,
            black_level=self._black_level(), light_gains=learned.gains if learned else self.base.light_gains,
            camera=camera, tossup=learned.params if learned else self.base.tossup,
            tallyup=self.tally_model or self.base.tallyup,
        )

    def _empty_image(self) -> np.ndarray | None:
        with self._lock:
            return self._shots[self.empty_id].image() if self.empty_id in self._shots else None

    def scanner(self, dice_set: str, empty: np.ndarray | None = None) -> Scanner:
        """A scanner as the profile being made would give; `empty`: the empty tray, if decoded already."""
        profile = self.profile()
        return Scanner(dice_set=dice_set, tossup=profile.tossup, tally=profile.tallyup, tray=profile.tray,
                       die_size=profile.die_size, frame_size=profile.frame_size, black_level=profile.black_level,
                       light_gains=profile.light_gains, empty_tray=empty if empty is not None else self._empty_image(),
                       finder=self.finder(), face_net=self.face_net(), top_face=self.top_face())

    def run_check(self) -> dict[str, Any]:
        rolls = [(s.image(), s.confirmed or ()) for s in self._confirmed("tossup") + self._confirmed("tallyup")]
        if not rolls:
            raise CalibrationError("nothing to check yet: confirm a Toss Up roll (step 4) first", 409)
        empty = self._empty_image()
        scanners = {"tossup": self.scanner("tossup", empty), "tallyup": self.scanner("tallyup", empty)}
        with self._lock:
            learned, tray = self.learned, self.tray
        tallies = self._confirmed("tallyup")
        result = check(rolls, lambda image, dice_set: scanners[dice_set].read(image), tray,
                       learned.die_size if learned else None, learned.frame_size if learned else None,
                       self.coverage() if tallies else None, empty)
        with self._lock:
            self.result = result
        return {"check": result.to_json()}

    def save(self, library: ProfileLibrary, activate: bool = True) -> Path:
        with self._lock:
            if self.learned is None:
                raise CalibrationError("confirm a Toss Up roll (step 4) before saving: the die size comes from it", 409)
            empty = self._shots[self.empty_id].jpeg if self.empty_id in self._shots else None
        path = library.save(self.profile(), empty, activate=activate)
        with self._lock:
            self.saved = path.stem
        log.info("calibration profile %s saved to %s%s", self.name, path, " (active)" if activate else "")
        return path

    # -- what the page sees ----------------------------------------------------------------

    def _tray_json(self) -> list[list[float]] | None:
        with self._lock:
            return [[round(x, 1), round(y, 1)] for x, y in self.tray] if self.tray else None

    def state(self) -> dict[str, Any]:
        with self._lock:
            empty = self._shots.get(self.empty_id) if self.empty_id else None
            done = {
                "camera": self.framing is not None,
                "empty": self.tray is not None,
                "exposure": self.exposure is not None,
                "tossup": self.learned is not None,
                "tallyup": self.tally_model is not None,
                "check": self.result is not None,
            }
            return {
                "name": self.name, "steps": list(STEPS), "done": done,
                "framing": self.framing.to_json() if self.framing else None,
                "empty": empty.to_json() if empty else None, "tray": self._tray_json(),
                "tray_adjusted": self.tray_adjusted, "exposure": self.exposure,
                "learned": self.learned.to_json() if self.learned else None,
                "tossup_rolls": len(self._confirmed("tossup")), "tally_rolls": len(self._confirmed("tallyup")),
                "coverage": self.coverage().to_json(), "tally_taught": self.tally_model is not None,
                "teach_notes": self.teach_notes, "check": self.result.to_json() if self.result else None,
                "saved": self.saved,
            }


__all__ = ["CalibrationError", "CalibrationSession", "NOT_CONTROLLABLE", "STEPS", "Shot"]
