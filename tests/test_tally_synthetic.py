"""The Tally reader on drawn dice: two different looking sets, any tray, lamp and brightness.

`draw_scene` is a small synthetic studio (OpenCV only): coloured rounded cubes seen from above,
with a darker side band where the camera sees a side face, a soft shadow, white or dark print
(numbers in a Hershey font, circled numbers, a 5- or 6-pointed star), a lamp colour cast,
brightness change, noise and blur. LOOK_A and LOOK_B differ in every way the issue names:
body shades, ink colour, font and star shape. The tests teach the reader on a few photos of
one look and measure it, by code, on other photos.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace

import cv2
import numpy as np
import pytest

from scanner.frames import UNSURE
from scanner.labels import LabelledDie, LabelledPhoto
from scorekeeper.rules.dice import TALLY_FACES, UP_FACES

FACES = {**{die: tuple(faces) for die, faces in TALLY_FACES.items()}, "up": UP_FACES}
DICE = tuple(FACES)


@dataclass(frozen=True)
class Look:
    bodies: dict  # die -> BGR
    inks: dict  # die -> BGR
    font: int
    star_points: int
    star_inner: float
    stroke: float  # text stroke as a fraction of the face
    circle_thickness: float


LOOK_A = Look(
    bodies={"red": (36, 28, 196), "orange": (24, 118, 240), "yellow": (36, 206, 246), "green": (62, 140, 28),
            "blue": (186, 78, 28), "purple": (148, 48, 104), "up": (232, 238, 238)},
    inks={**{d: (240, 246, 246) for d in DICE[:6]}, "up": (28, 24, 24)},
    font=cv2.FONT_HERSHEY_SIMPLEX, star_points=5, star_inner=0.42, stroke=0.05, circle_thickness=0.05,
)
LOOK_B = Look(
    bodies={"red": (30, 20, 160), "orange": (50, 140, 250), "yellow": (90, 226, 250), "green": (80, 170, 70),
            "blue": (210, 120, 60), "purple": (190, 90, 150), "up": (24, 20, 20)},
    inks={**{d: (24, 20, 20) for d in DICE[:6]}, "up": (60, 190, 230)},
    font=cv2.FONT_HERSHEY_TRIPLEX, star_points=6, star_inner=0.55, stroke=0.06, circle_thickness=0.08,
)

BACKGROUNDS = {"dark_felt": (40, 38, 36), "green_felt": (40, 95, 30), "wood": (60, 110, 160), "grey_cloth": (120, 118, 115)}
CASTS = {"2700K": (0.55, 0.8, 1.0), "6500K": (1.0, 0.97, 0.93), "neutral": (1.0, 1.0, 1.0)}


def face_art(label: str, look: Look, n: int = 96) -> np.ndarray:
    """Where ink is printed on one face, as a float mask (n, n), upright."""
    art = np.zeros((n * 4, n * 4), np.uint8)
    big = n * 4
    c = big / 2
    if label == "star":
        outer, inner = 0.36 * big, 0.36 * big * look.star_inner
        k = look.star_points
        points = [(c + (outer if j % 2 == 0 else inner) * math.cos(-math.pi / 2 + j * math.pi / k),
                   c + 0.04 * big + (outer if j % 2 == 0 else inner) * math.sin(-math.pi / 2 + j * math.pi / k))
                  for j in range(2 * k)]
        cv2.fillPoly(art, [np.int32(points)], 255, cv2.LINE_AA)
    else:
        circled = label.startswith("(")
        text = label.strip("()")
        height = (0.30 if circled else 0.40) * big
        width_max = (0.50 if circled else 0.72) * big
        thickness = max(1, int(look.stroke * big))
        (w, h), _ = cv2.getTextSize(text, look.font, 1.0, thickness)
        scale = min(height / h, width_max / w)
        (w, h), _ = cv2.getTextSize(text, look.font, scale, thickness)
        cv2.putText(art, text, (int(c - w / 2), int(c + h / 2)), look.font, scale, 255, thickness, cv2.LINE_AA)
        if circled:
            cv2.circle(art, (int(c), int(c)), int(0.36 * big), 255, max(1, int(look.circle_thickness * big)), cv2.LINE_AA)
    return cv2.resize(art, (n, n), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0


def _rounded_square(n: int, radius: float) -> np.ndarray:
    mask = np.zeros((n, n), np.uint8)
    r = int(radius * n)
    cv2.rectangle(mask, (r, 0), (n - 1 - r, n - 1), 255, -1)
    cv2.rectangle(mask, (0, r), (n - 1, n - 1 - r), 255, -1)
    for x, y in ((r, r), (n - 1 - r, r), (r, n - 1 - r), (n - 1 - r, n - 1 - r)):
        cv2.circle(mask, (x, y), r, 255, -1)
    return mask.astype(np.float32) / 255.0


def square(cx: float, cy: float, side: float, angle: float) -> np.ndarray:
    h = side / 2
    c, s = math.cos(angle), math.sin(angle)
    return np.array([(cx + dx * c - dy * s, cy + dx * s + dy * c) for dx, dy in ((-h, -h), (h, -h), (h, h), (-h, h))], np.float32)


def _clockwise_from_top_left(points: np.ndarray) -> np.ndarray:
    start = int(np.argmin(points[:, 0] + points[:, 1]))
    return np.roll(points, -start, axis=0)


def draw_scene(dice, look: Look = LOOK_A, background=BACKGROUNDS["dark_felt"], cast=(1.0, 1.0, 1.0),
               gain: float = 1.0, seed: int = 0, glare: bool = False) -> tuple[np.ndarray, list[LabelledDie]]:
    """A 1280x720 tray with `dice` = [(die, face, cx, cy, side, angle)]; returns (image, labels)."""
    rng = np.random.default_rng(seed)
    image = np.zeros((720, 1280, 3), np.float32)
    image[:] = background
    image += rng.normal(0, 5, (720, 1280, 1)) * np.float32([1, 1, 1]) + rng.normal(0, 2, image.shape)
    labels = []
    n = 96
    rounded = _rounded_square(n, 0.12)
    for die, face, cx, cy, side, angle in dice:
        corners = square(cx, cy, side, angle)
        # The camera sees a side face of dice away from the image centre: a darker band.
        away = np.float32([cx - 640, cy - 360])
        shift = away / max(float(np.linalg.norm(away)), 1.0) * side * 0.22 * min(1.0, float(np.linalg.norm(away)) / 400)
        shadow = cv2.convexHull(np.concatenate([corners, corners + shift]) + np.float32([side * 0.12, side * 0.15]))
        cv2.fillConvexPoly(image, shadow.astype(np.int32), (np.float32(background) * 0.5).tolist(), cv2.LINE_AA)
        band = cv2.convexHull(np.concatenate([corners, corners + shift]))
        cv2.fillConvexPoly(image, band.astype(np.int32), (np.float32(look.bodies[die]) * 0.6).tolist(), cv2.LINE_AA)
        art = face_art(face, look, n)
        body = np.float32(look.bodies[die])
        ink = np.float32(look.inks[die])
        tile = body * (1 - art[..., None]) + ink * art[..., None]
        shade = np.linspace(1.02, 0.95, n, dtype=np.float32)[None, :, None]  # a lamp off to one side
        tile = tile * shade
        matrix = cv2.getPerspectiveTransform(np.float32([(0, 0), (n, 0), (n, n), (0, n)]), corners)
        warped = cv2.warpPerspective(tile, matrix, (1280, 720), flags=cv2.INTER_LINEAR)
        alpha = cv2.warpPerspective(rounded, matrix, (1280, 720), flags=cv2.INTER_LINEAR)[..., None]
        image = image * (1 - alpha) + warped * alpha
        ordered = _clockwise_from_top_left(corners)
        labels.append(LabelledDie(die=die, face=face, center=(cx, cy),
                                  corners=tuple((float(x), float(y)) for x, y in ordered), cocked=False))
    if glare and dice:
        _, _, cx, cy, side, _ = dice[0]
        cv2.circle(image, (int(cx + side * 0.25), int(cy - side * 0.25)), max(2, int(side * 0.08)), (255, 255, 255), -1, cv2.LINE_AA)
    image = image * np.float32(cast) * gain
    image = cv2.GaussianBlur(image, (3, 3), 0.8)
    image += rng.normal(0, 2.0, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8), labels


def random_layout(rng: np.random.Generator, count: int = 7, side: float | None = None,
                  touching: bool = False) -> list[tuple]:
    """Up to one die of each colour, random faces and yaw, not overlapping."""
    side = side or float(rng.uniform(42, 62))
    dice = list(rng.permutation(DICE)[:count])
    placed: list[tuple] = []
    for die in dice:
        for _ in range(200):
            if touching and placed and rng.random() < 0.5:
                _, _, px, py, _, pa = placed[-1]
                cx, cy, angle = px + side * 1.02, py + rng.uniform(-4, 4), pa
            else:
                cx, cy, angle = rng.uniform(120, 1160), rng.uniform(100, 620), rng.uniform(0, math.pi / 2)
            if 80 < cx < 1200 and 80 < cy < 640 and all(math.dist((cx, cy), (p[2], p[3])) > side * 1.5 for p in placed):
                break
        face = str(rng.choice(FACES[die]))
        placed.append((die, face, float(cx), float(cy), side, float(angle)))
    return placed


def photo_set(look: Look, count: int, seed: int, every_face: bool = False) -> list[tuple[np.ndarray, list[LabelledDie]]]:
    """`count` photos of `look` on random trays and lamps; `every_face` cycles each die's faces."""
    rng = np.random.default_rng(seed)
    photos = []
    for index in range(count):
        layout = random_layout(rng, count=7, touching=index % 3 == 2)
        if every_face:
            layout = [(die, FACES[die][index % 6], *rest) for die, _, *rest in layout]
        image, labels = draw_scene(
            layout, look, background=BACKGROUNDS[sorted(BACKGROUNDS)[index % len(BACKGROUNDS)]],
            cast=CASTS[sorted(CASTS)[rng.integers(len(CASTS))]], gain=float(rng.uniform(0.5, 1.1)),
            seed=int(rng.integers(1 << 30)), glare=index % 5 == 4,
        )
        photos.append((image, labels))
    return photos


def as_labelled_photos(photos, folder) -> list[LabelledPhoto]:
    """Write photos and labels in the fixture schema, as the teach command reads them."""
    import json

    result = []
    for index, (image, labels) in enumerate(photos):
        path = folder / f"photo-{index:02d}.png"
        cv2.imwrite(str(path), image)
        raw = {"image": path.name, "dice_set": "tallyup", "scene": {"split": "teach"},
               "dice": [{"die": d.die, "face": d.face, "center": list(d.center), "corners": [list(c) for c in d.corners],
                         "cocked": False} for d in labels]}
        (folder / f"photo-{index:02d}.json").write_text(json.dumps(raw))
        result.append(LabelledPhoto(image=path, dice_set="tallyup", dice=tuple(labels), scene={"split": "teach"}))
    return result


# --------------------------------------------------------------------------------------- tests


def _model_for(look: Look, seed: int = 7):
    from calibration.teach import learn_tally_model

    photos = photo_set(look, 18, seed, every_face=True)
    return learn_tally_model([(f"p{i}", image, labels) for i, (image, labels) in enumerate(photos)]).model


@pytest.fixture(scope="module")
def model_a():
    return _model_for(LOOK_A)


@pytest.fixture(scope="module")
def model_b():
    return _model_for(LOOK_B, seed=8)


def _score(model, photos):
    from scanner.evaluate import Scorecard
    from scanner.tally import read_tally

    card = Scorecard()
    for index, (image, labels) in enumerate(photos):
        card.add(f"photo {index}", labels, read_tally(image, model))
    return card


@pytest.mark.slow  # 24 photos read per look, half a minute each: CI runs it in its own pass (.ci/run)
@pytest.mark.parametrize("look_name", ["A", "B"])
def test_taught_on_18_photos_reads_other_photos_of_the_same_look(look_name, model_a, model_b):
    model, look = (model_a, LOOK_A) if look_name == "A" else (model_b, LOOK_B)
    card = _score(model, photo_set(look, 24, seed=300))  # seed 100 was used for tuning
    summary = card.summary()
    # Known gaps: look B's black Up Die merges with its own shadow on dark trays (missed, or
    # its face unsure), and in the dimmest photos (gain 0.5 under a 2700 K cast) look B's
    # yellow looks orange while the orange die is not found at all. Hershey digits make many
    # faces nearly alike (+1/+2/+3, 10/20/50, 20/70), which the reader only calls with a wide
    # margin: more "unsure", no confident mistakes. The colour tolerance is wide enough for
    # other tables' light (scanner.tally_model.TallyParams.spread_floor), so a die's outline takes
    # in more of its shading and shadow on these flat-coloured trays: quads a little off,
    # more "unsure". Bars: today's level (A: recall 100 %, faces 88.7 %; B: recall 92.9 %,
    # identity 100 %, faces 84.0 %; neither has a confident mistake).
    assert summary["detection_recall"] >= (0.99 if look_name == "A" else 0.92), card.failures
    assert summary["detection_precision"] >= 0.98, card.failures
    assert summary["identity_accuracy"] >= (0.99 if look_name == "A" else 0.98), card.failures
    assert summary["face_accuracy"] >= (0.87 if look_name == "A" else 0.83), (card.failures, card.confusion_table())
    # +100 / -100 differ by one short stroke: the worst pair (look B's on a black Up Die).
    assert summary["wrong_confident_rate"] <= 0.005, card.failures


def test_a_model_taught_on_one_look_does_not_confidently_misread_the_other(model_a):
    card = _score(model_a, photo_set(LOOK_B, 6, seed=200))
    total = max(card.faces_total, 1)
    # Body shades differ and the ink is dark: mostly "unsure" or still right, rarely confidently wrong.
    assert card.wrong_confident / total <= 0.25, card.failures


LAMP_GRID = [(background, cast, gain) for background in sorted(BACKGROUNDS) for cast in sorted(CASTS)
             for gain in (0.5, 0.75, 1.0)]


@pytest.fixture(scope="module")
def lamp_readings(model_a):
    """(labels, readings) per (background, cast, gain) of LAMP_GRID, each scene read once."""
    from scanner.tally import read_tally

    cache: dict[tuple, tuple[list[LabelledDie], list]] = {}

    def read(background: str, cast: str, gain: float):
        if (background, cast, gain) not in cache:
            rng = np.random.default_rng(zlib.crc32(f"{background} {cast} {gain}".encode()))
            image, labels = draw_scene(random_layout(rng), LOOK_A, BACKGROUNDS[background], CASTS[cast], gain, seed=3)
            cache[background, cast, gain] = labels, read_tally(image, model_a)
        return cache[background, cast, gain]

    return read


def _nearest(readings, label):
    return min(readings, key=lambda d: math.dist(d.center, label.center))


@pytest.mark.parametrize("background, cast, gain", LAMP_GRID)
def test_every_tray_lamp_colour_and_brightness(background, cast, gain, lamp_readings):
    """Every die is found and named in every light, and its face is one that die has (or unsure)."""
    labels, readings = lamp_readings(background, cast, gain)
    assert len(readings) == len(labels)
    for label in labels:
        nearest = _nearest(readings, label)
        assert math.dist(nearest.center, label.center) < 0.25 * 50
        assert nearest.die == label.die
        assert nearest.face in (*FACES[label.die], UNSURE)


def test_faces_across_every_tray_and_lamp_are_right_or_unsure(lamp_readings):
    """Faces over the whole grid: nearly all right, at most one confidently wrong in 252.

    Faces are judged over the grid, not scene by scene: the nearly alike pairs (+100 / -100
    differ by one short stroke) are told apart by a vote on the strokes that differ
    (TallyParams.pair_vote, 0.7), and a blurred, dim print can land on that line. The Up Die
    on green felt under 2700 K at full gain votes about 0.705 for +100 (confidence 0.664,
    wrong): on another CPU, OpenCV or numpy the same scene votes just under and comes out
    unsure. One such die is the reader's known error rate (wrong_confident_rate <= 0.005, as
    in the taught-photos test), not a property of a light. Today: 250 right, 1 unsure, 1 wrong.
    """
    right = unsure = 0
    wrong = []
    for background, cast, gain in LAMP_GRID:
        labels, readings = lamp_readings(background, cast, gain)
        for label in labels:
            face = _nearest(readings, label).face
            right += face == label.face
            unsure += face == UNSURE
            if face not in (label.face, UNSURE):
                wrong.append(f"{background} {cast} {gain}: {label.die} {label.face} read {face}")
    total = right + unsure + len(wrong)
    assert total == 7 * len(LAMP_GRID)
    assert right / total >= 0.97, wrong
    assert len(wrong) <= 1, wrong


@pytest.mark.parametrize("background", sorted(BACKGROUNDS))
def test_an_overexposed_camera_gives_unsure_or_nothing_never_a_wrong_reading(background, model_a):
    """At 1.8x the white die and the bright bodies clip: their colours are gone, not guessed."""
    from scanner.tally import read_tally

    rng = np.random.default_rng(11)
    image, labels = draw_scene(random_layout(rng), LOOK_A, BACKGROUNDS[background], gain=1.8, seed=4)
    for reading in read_tally(image, model_a):
        label = min(labels, key=lambda d: math.dist(d.center, reading.center))
        if reading.face != UNSURE and reading.confidence >= 0.5:
            assert (reading.die, reading.face) == (label.die, label.face)


def test_corners_are_the_top_face_clockwise_from_top_left(model_a):
    from scanner.tally import read_tally

    image, (label,) = draw_scene([("blue", "(10)", 640, 360, 56, 0.3)], LOOK_A)
    (reading,) = read_tally(image, model_a)
    assert reading.corners[0] == min(reading.corners, key=lambda c: c[0] + c[1])
    for corner, expected in zip(reading.corners, label.corners):
        assert math.dist(corner, expected) < 5
    assert abs(reading.size - 56) < 5


def test_touching_dice_are_separated_by_colour(model_a):
    from scanner.tally import read_tally

    layout = [("red", "star", 600, 360, 50, 0.0), ("orange", "60", 651, 360, 50, 0.0), ("yellow", "70", 600, 411, 50, 0.0)]
    image, labels = draw_scene(layout, LOOK_A, BACKGROUNDS["wood"])
    readings = read_tally(image, model_a)
    assert sorted(r.die for r in readings) == ["orange", "red", "yellow"]
    for label in labels:
        nearest = min(readings, key=lambda d: math.dist(d.center, label.center))
        assert math.dist(nearest.center, label.center) < 8


def test_a_face_the_die_cannot_show_is_never_read(model_a):
    """A red die printed with a 20 (not on the red die) must come out unsure, not as 50 or 100."""
    from scanner.tally import read_tally

    image, _ = draw_scene([("red", "20", 640, 360, 56, 0.2)], LOOK_A)
    (reading,) = read_tally(image, model_a)
    assert reading.die == "red"
    assert reading.face in (UNSURE, *FACES["red"])
    image, _ = draw_scene([("red", "+3", 640, 360, 56, 0.2)], LOOK_A)
    (reading,) = read_tally(image, model_a)
    assert reading.face == UNSURE or reading.confidence < 0.5


def test_empty_trays_have_no_dice(model_a):
    from scanner.tally import read_tally

    for background in BACKGROUNDS.values():
        image, _ = draw_scene([], LOOK_A, background)
        assert read_tally(image, model_a) == []


@pytest.mark.parametrize("angle", [0.0, 0.3, 0.7, 1.2])
@pytest.mark.parametrize("offset", [(0.0, 0.0), (12.0, 0.0), (9.0, -7.0), (-5.0, 11.0)])
def test_top_face_candidates_recover_the_top_square_from_a_die_outline(angle, offset):
    """A die seen off-axis: its outline is the top square swept by the offset of its bottom."""
    from scanner.tally_blobs import top_face_candidates

    side = 50.0
    top = square(300, 200, side, angle)
    outline = cv2.convexHull(np.concatenate([top, top + np.float32(offset)])).reshape(-1, 2).astype(np.float32)
    candidates = top_face_candidates(outline)
    assert 1 <= len(candidates) <= 2
    # One candidate is the top square, the other (if any) the bottom one: the print decides.
    best = min(candidates, key=lambda q: float(np.abs(q.mean(axis=0) - top.mean(axis=0)).max()))
    assert float(np.abs(best.mean(axis=0) - top.mean(axis=0)).max()) < 2.0
    assert abs(float(np.linalg.norm(best[1] - best[0])) - side) < 2.0
    if math.hypot(*offset) < 1:
        assert len(candidates) == 1


def test_a_small_die_s_outline_with_a_tilted_side_is_no_side_face():
    """The outline of a 31 px Up Die in a 640 px video frame: a rounded corner in shade cuts
    it, and perspective tilts its top side by 4 degrees against the bottom one. Only one end
    of that side touches the box; the gap to the other corner is no side face, and the top
    face is the whole square, not half of it."""
    from scanner.tally_blobs import top_face_candidates

    outline = np.float32([[34, 32], [33, 33], [5, 33], [4, 32], [3, 9], [3, 7], [4, 5], [7, 4], [33, 2], [34, 3]])
    candidates = top_face_candidates(outline)
    sides = [float(np.linalg.norm(q[1] - q[0])) for q in candidates]
    assert sides[0] > 27.0
    assert float(np.abs(candidates[0].mean(axis=0) - np.float32([18.5, 17.5])).max()) < 3.0


def test_a_rim_of_the_up_die_s_colour_round_the_dice_is_not_measured(monkeypatch, model_a):
    """A white rim along two sides of the tray floor (the Up Die's colour) makes a blob whose box spans
    far more than any die with its sides and shadow: it is passed over before being measured
    at full resolution, which costs several dice's worth, and the dice read the same."""
    from scanner import tally_blobs
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("red", "star", 600, 360, 56, 0.2), ("green", "40", 720, 380, 56, 0.5)])
    cv2.polylines(image, [np.int32([(330, 150), (330, 590), (950, 590)])], False, (235, 235, 235), 8)
    measured: list[tuple[int, int, int, int]] = []
    refine = tally_blobs._refine

    def counted(image, gains, compiled, index, box, *rest, **named):
        measured.append(box)
        return refine(image, gains, compiled, index, box, *rest, **named)

    monkeypatch.setattr(tally_blobs, "_refine", counted)
    reads = {}
    for span in (TallyParams().max_blob_span, 100.0):
        measured.clear()
        dice = TallyReader(model_a, TallyParams(max_blob_span=span)).read_dice(image)
        reads[span] = sorted((d.die, d.face) for d in dice)
        wide = [box for box in measured if max(box[2], box[3]) > 3 * TallyParams().max_side]
        assert bool(wide) == (span == 100.0), span
    assert reads[TallyParams().max_blob_span] == reads[100.0] == [("green", "40"), ("red", "star")]


@pytest.mark.parametrize("die, face", [("orange", "(70)"), ("purple", "(20)"), ("blue", "(10)")])
def test_a_circled_face_is_read_only_with_its_ring_shown_all_the_way_round(die, face, model_a):
    """The circle triggers the Up Die. A die's rounded edge in shade, seen through a square
    placed off the top face, looks like part of a ring: a circled face is read only when its
    ring shows all round, and one with an arc of its ring gone is "unsure", never circled. A
    gap of an eighth (motion blur, a glint) still leaves a ring (TallyParams.min_ring_rest)."""
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains
    from scanner.tally_model import PATCH_SIDE
    from scanner.tally_prints import face_patch, ink_of, match_face, ring_sectors, ring_shown

    reader = TallyReader(model_a)
    image, (label,) = draw_scene([(die, face, 640, 360, 56, 0.3)], LOOK_A)
    ink = ink_of(face_patch(image, np.float32(label.corners), balance_gains(image)))[0]
    template = reader.compiled.circled[die][face]
    assert min(ring_sectors(ink, template)) > 0.5
    assert ring_shown(ring_sectors(ink, template), reader.params)
    assert match_face(ink, die, reader.compiled, reader.params)[0] == face
    grid = np.indices(ink.shape).astype(np.float32) - (PATCH_SIDE - 1) / 2

    def without_arc(half_width: float) -> np.ndarray:
        arc = (np.hypot(grid[0], grid[1]) > 0.3 * PATCH_SIDE) & (np.abs(np.arctan2(grid[0], grid[1]) - 0.4) < half_width)
        return np.where(arc, 0.0, ink).astype(np.float32)

    # An arc of the ring gone (hidden in shade): no complete circle, whatever else matches.
    cut = without_arc(0.9)
    assert not ring_shown(ring_sectors(cut, template), reader.params)
    assert match_face(cut, die, reader.compiled, reader.params)[0] == face  # the templates alone would say so
    # An eighth of it gone: the rest shows it whole.
    gap = ring_sectors(without_arc(0.4), template)
    assert min(gap) < reader.params.min_ring and ring_shown(gap, reader.params)
    # The reader itself: arcs painted over with the body's colour in the photo.
    gains = balance_gains(image)
    corners = np.float32(label.corners)
    assert reader._read_face(image, gains, corners, die, 0.0)[0] == face
    centre = corners.mean(axis=0)
    body = image[int(round(corners[0][1] * 0.85 + centre[1] * 0.15)), int(round(corners[0][0] * 0.85 + centre[0] * 0.15))]

    def painted(start: int, end: int) -> np.ndarray:
        photo = image.copy()
        ring = np.zeros(image.shape[:2], np.uint8)
        cv2.ellipse(ring, (int(centre[0]), int(centre[1])), (26, 26), 0, start, end, 255, -1)
        cv2.circle(ring, (int(centre[0]), int(centre[1])), 15, 0, -1)
        photo[ring > 0] = body
        return photo

    assert reader._read_face(painted(-10, 60), gains, corners, die, 0.0)[0] == UNSURE
    assert reader._read_face(painted(20, 70), gains, corners, die, 0.0)[0] == face
    strict = TallyReader(model_a, replace(reader.params, min_ring_rest=math.inf))
    assert strict._read_face(painted(20, 70), gains, corners, die, 0.0)[0] == UNSURE


def test_identities_give_each_colour_to_one_die_at_most():
    from scanner.tally_colour import assign_identities
    from scanner.tally_model import TallyParams

    params = TallyParams()
    # Two dice both nearest to yellow: the closer one is yellow, the other takes its next
    # colour (orange) when that is clear enough, and nobody is left "unsure" for it.
    rows = [{"yellow": 0.8, "orange": 4.0, "red": 9.0}, {"yellow": 2.2, "orange": 3.0, "red": 8.0}]
    assert [die for die, _ in assign_identities(rows, params)] == ["yellow", "orange"]
    # Alone, the second die is too close to call between yellow and orange.
    assert assign_identities(rows[1:], params)[0][0] == UNSURE


def test_two_dice_nearest_one_colour_share_the_colours_out_together():
    """A lamp that clips an orange body towards yellow beside the yellow die (clipped further
    still): the orange die is nearer yellow than the yellow die is, but only the sharing-out
    that gives each die its own colour fits both (measured on tallyup-s08-r07 of the test split:
    the orange die was read as yellow and the yellow die left unnamed)."""
    from scanner.tally_colour import assign_identities
    from scanner.tally_model import TallyParams

    params = TallyParams()
    clipped_orange = {"yellow": 1.5, "orange": 3.6, "red": 6.8}
    yellow = {"yellow": 2.0, "green": 6.8, "orange": 7.0}
    named = assign_identities([clipped_orange, yellow], params)
    assert [die for die, _ in named] == ["orange", "yellow"]
    assert all(confidence > 0.5 for _, confidence in named)
    # Each alone is nearest yellow.
    assert assign_identities([clipped_orange], params)[0][0] == "yellow"
    # Where swapping costs hardly more, neither is named: a blue die in deep shade beside the
    # purple die, both nearest purple.
    shaded_blue, purple = {"purple": 2.7, "blue": 3.4}, {"purple": 1.0, "blue": 2.4}
    assert [die for die, _ in assign_identities([shaded_blue, purple], params)] == [UNSURE, UNSURE]
    # Dice nearest colours of their own keep them, sure: the other's colour is held by a die
    # that matches it better.
    named = assign_identities([{"red": 1.0, "orange": 2.5}, {"orange": 1.2, "red": 1.3}], params)
    assert [die for die, _ in named] == ["red", "orange"] and min(c for _, c in named) == 1.0


@pytest.mark.parametrize("look_name", ["A", "B"])
def test_teaching_learns_whether_the_print_is_lighter_than_the_body(look_name, model_a, model_b):
    model, look = (model_a, LOOK_A) if look_name == "A" else (model_b, LOOK_B)

    def lightness(bgr):
        return float(cv2.cvtColor(np.uint8([[bgr]]), cv2.COLOR_BGR2LAB)[0, 0, 0])

    for die in DICE:
        assert model.bodies[die].ink_lighter == (lightness(look.inks[die]) > lightness(look.bodies[die])), die
        # Glare that whitens the body takes a light print with it, not a dark one.
        assert model.dark_print(die) == (lightness(look.inks[die]) < lightness(look.bodies[die])), die
    assert not model.dark_print("no such die")


@pytest.mark.parametrize("die, face", [("red", "100"), ("orange", "60"), ("blue", "(10)"), ("yellow", "70"),
                                       ("green", "(40)"), ("up", "x2")])
@pytest.mark.parametrize("off", [(0.12, 0.0), (-0.1, 0.1)])
def test_a_face_found_too_small_and_off_centre_is_placed_on_the_print_and_read(die, face, off, model_a):
    """The found top face is often a part of it (a rounded edge in shade, print cutting the
    body apart): its print is cut off and unreadable. The reader moves and grows the square
    to where the print looks like a face, and reads it there."""
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains

    image, (label,) = draw_scene([(die, face, 640, 360, 56, 0.3)], LOOK_A)
    truth = np.float32(label.corners)
    centre = truth.mean(axis=0)
    across = (truth[1] - truth[0]) / 56
    down = (truth[3] - truth[0]) / 56
    found = ((truth - centre) * 0.7 + centre + (across * off[0] + down * off[1]) * 56).astype(np.float32)
    reader = TallyReader(model_a)
    gains = balance_gains(image)
    assert reader._read_face(image, gains, found, die, 0.0)[0] != face
    placed = reader._placed(image, gains, found, die)
    side = float(np.mean(np.linalg.norm(placed - np.roll(placed, 1, axis=0), axis=1)))
    assert abs(side / 56 - 1) < 0.15
    assert math.dist(placed.mean(axis=0), centre) < 0.12 * 56
    assert reader._read_face(image, gains, placed, die, 0.0)[0] == face


@pytest.mark.parametrize("die, face", [("red", "(50)"), ("purple", "20"), ("yellow", "70"), ("blue", "(10)")])
@pytest.mark.parametrize("grow, turn", [(1.3, 20.0), (1.25, -14.0)])
def test_a_face_found_too_large_and_turned_is_placed_on_the_print_and_read(die, face, grow, turn, model_a):
    """A neighbour or a shadow joined to the outline makes the found top face too large and
    turned off the top face's edges. Given the frame's common die size, the reader also tries
    squares of that size, and turns, and reads the face where the print looks like one."""
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains

    image, (label,) = draw_scene([(die, face, 640, 360, 56, 0.3)], LOOK_A)
    truth = np.float32(label.corners)
    centre = truth.mean(axis=0)
    angle = math.radians(turn)
    rotation = np.float32([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    found = ((truth - centre) @ rotation.T * grow + centre + np.float32([3, -2])).astype(np.float32)
    reader = TallyReader(model_a)
    gains = balance_gains(image)
    assert reader._read_face(image, gains, found, die, 0.0)[0] != face
    placed = reader._placed(image, gains, found, die, typical=56.0)
    side = float(np.mean(np.linalg.norm(placed - np.roll(placed, 1, axis=0), axis=1)))
    assert abs(side / 56 - 1) < 0.15
    assert math.dist(placed.mean(axis=0), centre) < 0.15 * 56
    assert reader._read_face(image, gains, placed, die, 0.0, reader.params.placed_ratio)[0] == face
    # Without the common size it never shrinks: part of a print can look like another face.
    unsized = reader._placed(image, gains, found, die)
    assert float(np.mean(np.linalg.norm(unsized - np.roll(unsized, 1, axis=0), axis=1))) >= 0.99 * 56 * grow


def test_a_face_found_larger_than_the_dice_is_not_grown_much_past_their_size(model_a):
    """An outline larger than the frame's common die size took in something else (a patterned
    tray's stripe, a neighbour): the squares tried about it are grown to at most
    TallyParams.place_largest times that size, however much better a larger one looks (here
    the print is drawn larger than the dice's size, so it looks best larger). A red 50 on a
    plaid cloth was so read as 100 on a square twice the dice's size, a white stripe its "1"."""
    from scanner.labels import mean_side
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains
    from scanner.tally_model import TallyParams

    image, (label,) = draw_scene([("red", "50", 640, 360, 64, 0.3)], LOOK_A)
    truth = np.float32(label.corners)
    found = (truth - truth.mean(axis=0)) * 0.8 + truth.mean(axis=0)
    typical = 34.0
    gains = balance_gains(image)
    bounded = TallyReader(model_a)._placed(image, gains, found, "red", typical=typical)
    assert mean_side(bounded) <= 1.01 * TallyParams().place_largest * typical
    unbounded = TallyReader(model_a, replace(TallyParams(), place_largest=10.0))._placed(image, gains, found, "red",
                                                                                      typical=typical)
    assert mean_side(unbounded) > 1.2 * mean_side(bounded)


def _blob(die: str, x: float, lab, side: float = 44.0, print_score: float = 0.8):
    from scanner.tally_blobs import Blob

    quad = square(x, 360, side, 0.0)
    return Blob(die, quad, (x, 360.0), side, 0.95, 0.95, np.float32(lab), print_score=print_score)


def test_a_die_found_in_a_neighbouring_colour_beside_that_colour_s_die_is_kept_and_named():
    """Under a warm lamp a blue die may come out purple beside the purple die: both are kept
    when no blob has blue's colour, and each gets its colour from the assignment."""
    from scanner.tally_blobs import choose_dice
    from scanner.tally_colour import assign_identities, colour_distances
    from scanner.tally_model import TallyParams, default_model

    model, params = default_model(), TallyParams()
    purple, blue = (np.float32(model.bodies[d].lab) for d in ("purple", "blue"))
    between = purple + 0.45 * (blue - purple)
    blobs = [_blob("purple", 500, between, print_score=0.9), _blob("purple", 620, purple, print_score=0.7)]
    assert len(choose_dice(blobs, model)) == 1  # one blob per colour, without the colours
    chosen = choose_dice(blobs, model, params)
    assert len(chosen) == 2
    names = [die for die, _ in assign_identities([colour_distances(b.lab, model, params) for b in chosen], params)]
    assert {b.center[0]: name for b, name in zip(chosen, names)} == {500: "blue", 620: "purple"}
    # A tray patterned in purple: its squares are not hidden blue dice.
    plaid = blobs + [_blob("purple", x, purple, print_score=0.3) for x in (150, 900)]
    assert len(choose_dice(plaid, model, params)) == 1
    # A blob of blue's colour anywhere: a second purple blob is no hidden blue die.
    blobs.append(_blob("blue", 800, blue))
    assert sorted(b.die for b in choose_dice(blobs, model, params)) == ["blue", "purple"]


def test_a_die_found_in_two_colours_leaves_the_other_colour_to_its_own_die():
    """The blue die found twice, as blue and (more die-like) as purple, is chosen as purple
    first; the purple die found elsewhere then takes purple, and the blue die its blue blob."""
    from scanner.tally_blobs import choose_dice
    from scanner.tally_model import TallyParams, default_model

    model, params = default_model(), TallyParams()
    purple, blue = (np.float32(model.bodies[d].lab) for d in ("purple", "blue"))
    between = purple + 0.45 * (blue - purple)
    blobs = [_blob("blue", 500, blue, side=40.0, print_score=0.78), _blob("purple", 500, between, print_score=0.97),
             _blob("purple", 620, purple, print_score=0.93), _blob("red", 740, model.bodies["red"].lab)]
    chosen = {b.die: b.center[0] for b in choose_dice(blobs, model, params)}
    assert chosen == {"blue": 500, "purple": 620, "red": 740}


@pytest.mark.parametrize("face, other", [("+100", "-100"), ("20", "70"), ("+2", "+3"), ("60", "70")])
def test_two_similar_prints_are_told_apart_where_they_differ(face, other):
    """+100 and -100 correlate almost as well with either template; the vote looks only at
    the strokes in which they differ (the "+"'s upright), at any turn and a small shift."""
    from scanner.tally_model import PATCH_SIDE, SHIFT, TEMPLATE_SIDE
    from scanner.tally_prints import _aligned, pair_vote

    def template(label):
        return face_art(label, LOOK_A, TEMPLATE_SIDE)

    a, b = template(face), _aligned(template(other), template(face))
    for turn, shift in ((0, (0, 0)), (1, (1, -1)), (3, (-2, 1))):
        for label, expected in ((face, 1.0), (other, 0.0)):
            ink = np.roll(np.pad(np.rot90(template(label), turn), SHIFT), shift, axis=(0, 1))
            assert ink.shape == (PATCH_SIDE, PATCH_SIDE)
            assert abs(pair_vote(ink, a, b, 0.35) - expected) < 0.3, (label, turn, shift)


@pytest.mark.parametrize("face, expected", [("50", ("blue", "50")), ("10", ("blue", "10")), ("20", (UNSURE, UNSURE))])
def test_a_die_coloured_between_blue_and_purple_is_named_by_a_print_only_one_of_them_has(face, expected, model_a):
    from dataclasses import replace

    from scanner.tally import TallyReader

    blue, purple = np.float32(LOOK_A.bodies["blue"]), np.float32(LOOK_A.bodies["purple"])
    between = replace(LOOK_A, bodies={**LOOK_A.bodies, "blue": tuple(int(v) for v in (blue + purple) / 2)})
    image, _ = draw_scene([("blue", face, 640, 360, 56, 0.3)], between)
    reader = TallyReader(model_a)
    (read,) = reader.read_dice(image)
    distances = sorted(read.distances.values())
    assert distances[1] - distances[0] < reader.params.identity_margin  # the colour alone cannot tell
    assert (read.die, read.face) == expected


def test_a_clipped_yellow_die_s_20_is_still_told_from_its_70(model_a):
    """Overexposed, a yellow body clips in red and green while its white print still stands
    out: the strokes in which 20 and 70 differ still tell them apart."""
    from scanner.tally import TallyReader

    image, _ = draw_scene([("yellow", "20", 640, 360, 56, 0.3)], LOOK_A, BACKGROUNDS["dark_felt"], gain=1.3)
    (read,) = TallyReader(model_a).read_dice(image)
    assert read.blob.clipped > TallyReader(model_a).params.max_clipped
    assert (read.die, read.face) == ("yellow", "20")


def test_a_clipped_die_named_against_its_colour_is_not_renamed_by_the_colour_it_clips_into(model_a):
    """Clipping turns an orange body yellow, never a yellow one orange: on the edge of a die
    named orange (by the finder, against its yellow-looking body) yellow tells nothing, while
    orange on the edge of a die named yellow does (TallyReader._rival_by_rim). The play set's
    tallyplay-tallyup-s00-r00: an orange star clipped towards yellow, a yellow die beside it in
    the edge band, was renamed yellow, a confident mistake; it is now left unsure."""
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains, clipped_distances

    reader = TallyReader(model_a)
    image, _ = draw_scene([("yellow", "star", 640, 360, 56, 0.3)], LOOK_A, BACKGROUNDS["dark_felt"])
    (read,) = reader.read_dice(image)
    yellow = np.float32(model_a.bodies["yellow"].lab)
    assert clipped_distances(yellow, model_a, reader.params)["orange"] <= reader.params.rival_clip_margin
    gains = balance_gains(image)
    excess = reader._blob_edge_excess(image, gains, read.blob)
    assert reader._rival_by_rim(image, gains, read.blob, "orange", ["yellow"], None, excess) is None
    # The rival's colour on the edge of a die it does not clip into still names the die.
    renamed = reader._rival_by_rim(image, gains, read.blob, "green", ["yellow"], None, excess)
    assert renamed is not None and (renamed[0], renamed[2][0]) == ("yellow", "star")


@pytest.mark.parametrize("level", [0, 6, 12, 30])
def test_a_clipped_die_stays_clipped_with_a_profile_s_black_level_taken_off(level, model_a):
    """Stray light adds to every pixel and a profile takes its black level off again; a
    channel the camera clipped comes back at 255 minus that level, not 255. The clipping is
    found where the frame's clipped pixels pile up (clip_levels), so a clipped die is still
    treated as one."""
    from scanner.reader import subtract_black_level
    from scanner.tally import TallyReader

    image, _ = draw_scene([("yellow", "20", 640, 360, 56, 0.3)], LOOK_A, BACKGROUNDS["dark_felt"], gain=1.3)
    reader = TallyReader(model_a)
    (plain,) = reader.read_dice(image)
    stray = subtract_black_level(cv2.add(image, (level, level, level, 0)), (level, level, level))
    (read,) = reader.read_dice(stray)
    assert plain.blob.clipped > reader.params.max_clipped
    assert read.blob.clipped == pytest.approx(plain.blob.clipped, abs=0.03)
    assert (read.die, read.face) == ("yellow", "20")


def _piled(top: int, count: int) -> np.ndarray:
    """A frame whose channels spread evenly below `top`, with its first rows at `top`: `count`
    pixels of them where clip_levels looks (every fourth pixel each way)."""
    rng = np.random.default_rng(5)
    image = rng.integers(0, top, (400, 400, 3), dtype=np.uint16).astype(np.uint8)
    image.reshape(-1, 3)[:count * 16] = top
    return image


@pytest.mark.parametrize("top, count, expected", [
    (255, 400, 253),  # as the camera gives it: from 253, as ever
    (245, 400, 243),  # stray light of 10 taken off: the pile lies lower, the level with it
    (230, 400, 228),
    (245, 3, 253),  # a few pixels are no pile
    (150, 400, 253),  # far below any camera's clipping (CLIP_LOWEST): not taken for one
])
def test_clip_levels_follow_the_pile_of_clipped_pixels(top, count, expected):
    from scanner.tally_blobs import clip_levels

    assert clip_levels(_piled(top, count)) == (expected, expected, expected)


def test_a_frame_without_a_pile_is_clipped_from_253():
    from scanner.tally_blobs import CAMERA_CLIP, clip_levels

    ramp = np.repeat(np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 64, axis=0), 3, axis=2)
    assert clip_levels(ramp) == CAMERA_CLIP
    assert clip_levels(np.zeros((64, 64, 3), np.uint8)) == CAMERA_CLIP


def test_a_clipped_die_s_face_is_read_when_an_unclipped_margin_and_its_strokes_agree(model_a):
    """On a clipped die neither sign alone reads a 20 against a 70 (the margin must be wider,
    the strokes that differ are fainter): the margin an unclipped die would need and a vote
    for the 20's own strokes, together, do. Either one failing leaves it unsure."""
    from scanner.tally import TallyReader
    from scanner.tally_model import SHIFT

    reader = TallyReader(model_a)
    face, other = reader.compiled.pairs["yellow"][("20", "70")]
    only_face = (face - other) > reader.params.pair_difference
    only_other = (other - face) > reader.params.pair_difference

    def print_of(own: float, ghost: float) -> np.ndarray:
        """The 20 with its own strokes at `own` of their ink and the 70's at `ghost`."""
        return np.pad(np.where(only_face, own * face, np.where(only_other, ghost * other, face)), SHIFT).astype(np.float32)

    ink = print_of(0.6, 0.3)
    wide = {"20": 0.96, "70": 0.889, "star": 0.59, "(40)": 0.6}
    narrow = {"20": 0.93, "70": 0.91, "star": 0.59, "(40)": 0.6}
    assert reader._clipped_decision(ink, "yellow", wide, reader.params)[0] == "20"
    assert reader._clipped_decision(ink, "yellow", wide, reader.params)[1] <= 0.6
    assert reader._clipped_decision(ink, "yellow", narrow, reader.params)[0] == UNSURE
    assert reader._clipped_decision(print_of(0.3, 0.5), "yellow", wide, reader.params)[0] == UNSURE


def test_a_clipped_die_is_not_doubted_for_a_die_that_lies_elsewhere(model_a):
    """A clipped yellow 70 might be a clipped orange one (orange shows 70 too), unless the
    orange die lies elsewhere in the frame, matching its colour better."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    reader = TallyReader(model_a, TallyParams(clipped_identity_distance=8.0, rival_margin=8.0))  # orange counts as near here
    yellow, orange = ("yellow", "70", 640, 360, 56, 0.3), ("orange", "star", 760, 360, 56, 0.1)
    alone, _ = draw_scene([yellow], LOOK_A, BACKGROUNDS["dark_felt"], gain=1.3)
    (read,) = reader.read_dice(alone)
    assert read.blob.clipped > reader.params.max_clipped and read.distances["orange"] <= 8.0
    assert (read.die, read.face) == ("yellow", UNSURE)
    both, _ = draw_scene([yellow, orange], LOOK_A, BACKGROUNDS["dark_felt"], gain=1.3)
    read = min(reader.read_dice(both), key=lambda d: math.dist(d.blob.center, (640, 360)))
    assert (read.die, read.face) == ("yellow", "70")


def test_a_clipped_die_is_doubted_only_for_dice_whose_colour_lies_about_as_near(model_a):
    """A clipped yellow 70 might be a clipped orange one only while orange lies within
    rival_margin of yellow's distance: a colour much further off is another die."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("yellow", "70", 640, 360, 56, 0.3)], LOOK_A, BACKGROUNDS["dark_felt"], gain=1.3)
    near = TallyParams(clipped_identity_distance=8.0)
    (read,) = TallyReader(model_a, near).read_dice(image)
    gap = read.distances["orange"] - read.distances["yellow"]
    assert read.blob.clipped > near.rival_clipped and read.distances["orange"] <= 8.0 and gap > 0.5
    for margin, face in ((gap + 0.5, UNSURE), (gap - 0.5, "70")):
        (read,) = TallyReader(model_a, replace(near, rival_margin=margin)).read_dice(image)
        assert (read.die, read.face) == ("yellow", face), margin


@pytest.mark.parametrize("named, sure, expected", [
    ("yellow", 0.995, ("yellow", "70")),  # the finder sure of the colour's own die
    ("orange", 0.995, ("orange", "70")),  # ...or of its rival: orange shows 70 too
    ("orange", 0.97, ("yellow", UNSURE)),  # sure enough to break a tie, not to overrule clipping
    ("green", 0.995, ("yellow", UNSURE)),  # a die that is no rival here
])
def test_a_clipped_die_its_print_cannot_tell_from_a_rival_is_the_one_the_finder_is_sure_of(named, sure, expected, model_a):
    """A clipped yellow 70 might be a clipped orange one, and the print cannot tell (both show
    70): the finder, which sees the whole die, chooses between them when it is all but certain."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    params = TallyParams(clipped_identity_distance=8.0, rival_margin=8.0)  # orange counts as near here
    image, _ = draw_scene([("yellow", "70", 640, 360, 56, 0.3)], LOOK_A, BACKGROUNDS["dark_felt"], gain=1.3)
    finder = StubFinder([_found(named, 641.0, 359.0, 56.0, 0.3, sure=sure)])
    (read,) = TallyReader(model_a, params, finder=finder).read_dice(image)
    assert read.blob.clipped > params.rival_clipped
    assert (read.die, read.face) == expected
    if expected[1] != UNSURE:
        assert read.die_confidence == 0.5


@pytest.mark.parametrize("orange_sure, yellow_sure, clipped, held_face, swapped", [
    (0.9, 0.8, 0.3, "star", True),
    (0.9, 0.4, 0.3, "star", False),  # the finder does not give the yellow die the name "yellow"
    (0.4, 0.8, 0.3, "star", False),  # ...nor the orange one "orange"
    (0.9, 0.8, 0.1, "star", False),  # the die named yellow is hardly clipped: its colour stands
    (0.9, 0.8, 0.3, "(40)", False),  # its face was read as one only the yellow die shows
])
def test_a_clipped_orange_die_named_yellow_swaps_names_with_the_yellow_die_where_the_finder_says_so(
        orange_sure, yellow_sure, clipped, held_face, swapped, model_a):
    """Clipping turns an orange die yellow; one die of each colour being in a set, the yellow
    die beside it is then named orange, its 20 read as the orange die's 70. Where the finder
    gives each the other's name (TallyParams.swap_identity) and the clipped die's print reads
    as a face of its new die, the two swap names and their faces are read again as theirs."""
    from scanner.tally import DieRead, TallyReader
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("orange", "star", 400.0, 300.0, 56.0, 0.3), ("yellow", "20", 800.0, 400.0, 56.0, 0.1)],
                          LOOK_A, seed=3)
    finder = StubFinder([_found("orange", 400.0, 300.0, 56.0, 0.3, sure=orange_sure),
                         _found("yellow", 800.0, 400.0, 56.0, 0.1, sure=yellow_sure)])
    reader = TallyReader(model_a, finder=finder)
    by_die = {read.die: read for read in reader.read_dice(image)}
    star, twenty = by_die["orange"], by_die["yellow"]
    assert (star.face, twenty.face) == ("star", "20")
    star.blob.clipped = clipped
    # As the clipped orange die left them: each holds the other's name.
    named = [DieRead(star.blob, "yellow", 0.9, star.distances, held_face, 0.9, {}),
             DieRead(twenty.blob, "orange", 0.9, twenty.distances, "70", 0.9, {})]
    result = reader._swapped_by_finder(image, balance_gains(image), named, lambda: finder.found, None)
    if swapped:
        assert [(d.die, d.face) for d in result] == [("orange", "star"), ("yellow", "20")]
        assert all(d.die_confidence == 0.5 and 0.0 < d.confidence <= 0.5 for d in result)
    else:
        assert result == named


def test_clipping_turns_an_orange_die_yellow_but_no_green_one(model_a):
    """A body lit brighter until the camera clips it keeps moving one way: orange's red clips
    and it looks yellow; a green die never does, so it is no rival of a clipped yellow one."""
    from scanner.tally_colour import clipped_distances, colour_distances, lab_of
    from scanner.tally_model import TallyParams

    params = TallyParams()
    blown_orange = lab_of(np.clip(np.float32(LOOK_A.bodies["orange"]) * 2.0, 0, 255))
    plain = colour_distances(blown_orange, model_a, params)
    brighter = clipped_distances(blown_orange, model_a, params)
    assert brighter["orange"] < plain["orange"] and brighter["orange"] <= min(plain.values()) + params.rival_clip_margin
    blown_yellow = lab_of(np.clip(np.float32(LOOK_A.bodies["yellow"]) * 1.5, 0, 255))
    plain = colour_distances(blown_yellow, model_a, params)
    assert clipped_distances(blown_yellow, model_a, params)["green"] > min(plain.values()) + params.rival_clip_margin


@pytest.mark.parametrize("white, balanced", [
    ((210, 240, 255), True),  # a warm lamp a camera's white balance left over
    ((80, 119, 172), True),  # a warmer one at half the light: green 0.69 of red
    ((95, 170, 250), True),  # ...on a table whose own lamp was warm: blue 0.38 of red
    ((40, 200, 255), False),  # no white in view: yellow print is the brightest (blue 0.16 of red)
    ((60, 150, 255), False),  # ...or an orange die
])
def test_the_white_patch_balances_a_lamp_s_colour_and_only_a_lamp_s(white, balanced):
    from scanner.tally_colour import balance_gains
    from scanner.tally_model import WHITE_LEVEL

    image = np.full((200, 300, 3), 30, np.uint8)
    image[80:120, 120:180] = white  # the brightest patch: 1/25 of the frame
    gains = balance_gains(image)
    if balanced:
        assert gains * np.float32(white) == pytest.approx([WHITE_LEVEL] * 3, rel=1e-3)
    else:  # only its level: one gain for every channel
        assert gains[0] == gains[1] == gains[2] == pytest.approx(WHITE_LEVEL / max(white))


class StubFinder:
    """Stands in for the die finder net: answers the dice it was given (those it scores at
    least the threshold asked for, as DieFinder.find does)."""

    threshold = 0.2

    def __init__(self, found):
        self.found = found

    def find(self, image, half=None, threshold=None):
        return [die for die in self.found if die.score >= (self.threshold if threshold is None else threshold)]


def _found(die: str, cx: float, cy: float, side: float, angle: float, cocked: float = 0.0, sure: float = 0.99,
           score: float = 0.9):
    from scanner.finder import IDENTITIES, FoundDie

    identities = tuple(sure if name == die else (1 - sure) / (len(IDENTITIES) - 1) for name in IDENTITIES)
    return FoundDie((cx, cy), side, angle, score, cocked, (1.0, 0.0, 0.0), identities)


def test_a_blown_die_the_finder_takes_for_the_up_die_is_the_die_its_edge_shows(model_a):
    """Glare blows a purple die's top out white; the finder, seeing a white top, takes it for
    the Up Die, and no print is left to read. Its rounded edge stays purple, so it is named
    purple, its face left for the player (TallyReader._with_found, _rim_winner)."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("purple", "20", 700.0, 400.0, 52.0, 0.2), ("red", "star", 400.0, 300.0, 52.0, 0.3)], seed=5)
    cv2.fillConvexPoly(image, np.int32(np.round(square(700.0, 400.0, 52.0 * 0.9, 0.2))), (255, 255, 255), cv2.LINE_AA)
    finder = StubFinder([_found("up", 700.0, 400.0, 52.0, 0.2), _found("red", 400.0, 300.0, 52.0, 0.3)])
    read = [(str(d.die), d.face) for d in TallyReader(model_a, finder=finder).read(image)]
    assert read == [("red", "star"), ("purple", UNSURE)]
    edge_blind = replace(TallyParams(), rim_alone_share=math.inf)
    read = [(str(d.die), d.face) for d in TallyReader(model_a, edge_blind, finder=finder).read(image)]
    assert read == [("red", "star"), ("up", UNSURE)]


def test_a_blown_die_s_edge_names_it_unless_a_die_clipping_into_that_colour_shows_its_own_too(model_a):
    """A blown blue die's edge shows purple where it clips, so purple on an edge names the die
    purple only where none of the blue die's own blue shows there (however much the tray
    around has), and counts as blue where the purple die lies elsewhere in the frame
    (TallyReader._rim_winner)."""
    from scanner.tally import TallyReader

    reader = TallyReader(model_a)
    assert reader._turns_into("blue", "purple")
    bare = {die: (0.0, 0.0) for die in model_a.bodies}
    purple_edge = {**bare, "purple": (0.47, 0.0), "up": (0.19, 0.0)}
    assert reader._rim_winner(purple_edge, {"red"})[0] == "purple"
    assert reader._rim_winner({**purple_edge, "blue": (0.05, 0.0)}, {"red"})[0] == UNSURE
    assert reader._rim_winner({**purple_edge, "blue": (0.05, 0.2)}, {"red"})[0] == UNSURE  # on blue cloth too
    blue_edge = {**bare, "blue": (0.09, 0.0), "purple": (0.095, 0.0), "up": (0.23, 0.0)}
    assert reader._rim_winner(blue_edge, {"purple"})[0] == "blue"
    assert reader._rim_winner(blue_edge, set())[0] == UNSURE


def test_a_blown_die_the_finder_names_keeps_the_name_where_its_edge_shows_the_colour_it_clips_into(model_a):
    """Check s14-r02: a blown orange die on green felt, the finder sure it is orange, its edge
    0.09 orange and 0.19 yellow where it clips (less the tray's: 0.07 each), under rim_share
    alone. The yellow die lies elsewhere in the frame, so that yellow is the orange die's too
    (TallyReader._edge_excess)."""
    from scanner.tally import TallyReader

    reader = TallyReader(model_a)
    assert reader._turns_into("orange", "yellow")
    shares = {**{die: (0.0, 0.0) for die in model_a.bodies}, "orange": (0.086, 0.012), "yellow": (0.188, 0.122),
              "green": (0.205, 0.804), "up": (0.393, 0.033)}
    found = _found("orange", 652.0, 476.0, 44.0, 0.8, sure=0.99)
    assert reader._named_by_rim(found, shares, {"red", "yellow"}) == ("orange", reader.params.rim_identity_confidence)
    assert reader._named_by_rim(found, shares, {"red"}) == (UNSURE, 0.0)


def test_a_die_only_the_finder_found_is_named_by_it_and_its_face_read_from_the_print(model_a):
    from scanner.finder import FinderRules
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    layout = [("red", "star", 400.0, 300.0, 52.0, 0.3), ("blue", "(10)", 800.0, 400.0, 52.0, 0.1)]
    image, _ = draw_scene(layout, seed=5)
    # No blob passes the print check: every die is left to the finder.
    blind = replace(TallyParams(), min_print_score=2.0)
    assert TallyReader(model_a, blind).read(image) == []
    finder = StubFinder([_found("red", 400.0, 300.0, 52.0, 0.3), _found("red", 800.0, 400.0, 52.0, 0.1, cocked=0.9)])
    dice = TallyReader(model_a, blind, finder=finder).read(image)
    # One red die in a set: the second is not red; its body colour and print name it blue. The
    # finder's word that it leans is not taken (FinderRules.tally_leaning) unless asked for.
    assert [(d.die, d.face, d.cocked) for d in dice] == [("red", "star", False), ("blue", "(10)", False)]
    assert dice[0].confidence > 0.5 and 0.0 < dice[1].confidence <= TallyParams().colour_print_identity_confidence
    leaning = TallyReader(model_a, blind, finder=finder, finder_rules=replace(FinderRules(), tally_leaning=True)).read(image)
    assert [(d.die, d.face, d.cocked) for d in leaning] == [("red", "star", False), ("blue", "(10)", True)]


@pytest.mark.parametrize("holder_face, score, sure, displaced", [
    (UNSURE, 0.9, 0.99, True),
    ("star", 0.9, 0.99, False),  # the die read there has its face read: it stays
    (UNSURE, 0.6, 0.99, False),  # the finder not sure there is a die (FinderRules.displace_score)
    (UNSURE, 0.9, 0.9, False),  # nor which die it is (FinderRules.sure_identity)
])
def test_a_die_the_finder_is_sure_of_takes_the_place_of_an_unread_die_of_another_name(holder_face, score, sure, displaced,
                                                                                      model_a):
    """A patch of tray in a die's colour beside a white Up Die, taken for a die over it and its
    face left unread, holds the place the finder's Up Die needs: where the finder is sure of the
    Up Die and its print reads, the Up Die takes that place."""
    from scanner.tally import Blob, DieRead, TallyReader
    from scanner.tally_blobs import clip_levels
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("up", "+1", 400.0, 300.0, 52.0, 0.3)], seed=3)
    patch = Blob("green", np.float32(square(415.0, 310.0, 52.0, 0.3)), (415.0, 310.0), 52.0, 1.0, 1.0,
                 np.zeros(3, np.float32))
    holder = DieRead(patch, "green", 0.6, {}, holder_face, 0.0 if holder_face == UNSURE else 0.6, {})
    reader = TallyReader(model_a, finder=StubFinder([]))
    found = [_found("up", 400.0, 300.0, 52.0, 0.3, sure=sure, score=score)]
    dice = reader._with_found(image, balance_gains(image), [holder], found, None, True, clip_levels(image))
    assert [(d.die, d.face) for d in dice] == ([("up", "+1")] if displaced else [("green", holder_face)])


def test_a_face_read_on_a_square_much_smaller_than_the_dice_must_read_the_same_at_their_size(model_a):
    """A square that took in only a part of a face's print (the "00" of a red 100 reads 50) is
    checked on a square of the frame's common die size about its centre (TallyParams.small_face):
    a face it reads differently there is not kept; one it reads the same, or a square not that
    small, or a frame without a common size, is."""
    from scanner.tally import Blob, TallyReader
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("red", "100", 400.0, 300.0, 52.0, 0.3)], seed=2)
    reader = TallyReader(model_a)

    def blob(side):
        return Blob("red", np.float32(square(400.0, 300.0, side, 0.3)), (400.0, 300.0), side, 1.0, 1.0,
                    np.zeros(3, np.float32))

    def same(face, side, typical=52.0):
        return reader._reads_the_same_grown(image, balance_gains(image), blob(side), "red", face, typical, ())

    small = 0.5 * 52.0  # the print's part, well below small_face of the dice's size
    assert not same("50", small)
    assert same("100", small)
    assert same("50", 52.0)  # not that small: nothing to check
    assert same("50", small, typical=None)


def test_the_common_die_size_is_the_finder_s_where_too_few_blobs_agree_on_one(model_a):
    """Three blobs or more give the frame's common die size (their median top face); a roll of
    one or two dice, common in a game, takes the finder's (the median of its dice), so that a
    lone red 100 whose square took in only the "00" is still checked at the dice's size; with
    neither, there is none."""
    from scanner.tally import Blob, TallyReader

    def blob(side):
        return Blob("red", np.float32(square(400.0, 300.0, side, 0.3)), (400.0, 300.0), side, 1.0, 1.0,
                    np.zeros(3, np.float32))

    finder = StubFinder([_found("red", 400.0, 300.0, 50.0, 0.3), _found("blue", 600.0, 300.0, 54.0, 0.3),
                         _found("green", 800.0, 300.0, 60.0, 0.3, score=0.1)])  # below the finder's bar
    reader = TallyReader(model_a, finder=finder)

    def found():
        return finder.find(None)

    assert reader._common_side([blob(30.0)], found) == pytest.approx(52.0)
    assert reader._common_side([blob(30.0), blob(40.0), blob(44.0)], found) == pytest.approx(40.0)
    assert reader._common_side([blob(30.0)], lambda: []) is None
    assert reader._common_side([], found) == pytest.approx(52.0)


def _blown_top(image: np.ndarray, cx: float, cy: float, side: float, angle: float) -> np.ndarray:
    """The photo with the lamp's mirror image over a die's top face: all of it white but its
    rounded rim."""
    out = image.copy()
    cv2.fillConvexPoly(out, np.int32(np.round(square(cx, cy, side * 0.86, angle))), (255, 255, 255), cv2.LINE_AA)
    return out


@pytest.mark.parametrize("tray, held, named", [
    ("dark_felt", False, True),
    ("green_felt", False, True),  # purple rim, green tray: still purple
    ("dark_felt", True, False),  # another die of the frame is purple
])
def test_a_blown_out_die_only_the_finder_found_is_named_by_the_colour_of_its_rim(tray, held, named, model_a):
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    layout = [("purple", "star", 400.0, 300.0, 52.0, 0.3)] + ([("purple", "20", 900.0, 300.0, 52.0, 0.2)] if held else [])
    image, _ = draw_scene(layout, background=BACKGROUNDS[tray], seed=5)
    image = _blown_top(image, 400.0, 300.0, 52.0, 0.3)
    finder = StubFinder([_found("purple", 400.0, 300.0, 52.0, 0.3)])
    at = [d for d in TallyReader(model_a, finder=finder).read(image) if math.dist(d.center, (400.0, 300.0)) < 10]
    assert len(at) == 1
    assert at[0].die == ("purple" if named else UNSURE) and at[0].face == UNSURE
    if named:
        assert at[0].confidence == 0.0  # its face unread: nothing to score yet
    # Without the rim's colour: off.
    plain = replace(TallyParams(), rim_share=2.0)
    (alone,) = [d for d in TallyReader(model_a, plain, finder=finder).read(image) if math.dist(d.center, (400.0, 300.0)) < 10]
    assert alone.die == UNSURE


def test_a_blown_out_die_the_finder_is_unsure_of_is_kept_where_its_rim_names_it(model_a):
    """The finder scores a die the lamp blew out white below FinderRules.blown_score: without
    a print to read it may be the lamp's mirror image on the tray, and is dropped, unless its
    own edge shows a die's body colour (a mirror image on the tray has no such rim)."""
    from scanner.finder import FinderRules
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("purple", "star", 400.0, 300.0, 52.0, 0.3)], background=BACKGROUNDS["dark_felt"], seed=5)
    image = _blown_top(image, 400.0, 300.0, 52.0, 0.3)
    unsure_net = FinderRules().blown_score - 0.1
    finder = StubFinder([_found("purple", 400.0, 300.0, 52.0, 0.3, score=unsure_net)])

    def at(params: TallyParams, picture: np.ndarray) -> list[tuple[str | None, str | None]]:
        return [(d.die, d.face) for d in TallyReader(model_a, params, finder=finder).read(picture)
                if math.dist(d.center, (400.0, 300.0)) < 10]

    assert at(TallyParams(), image) == [("purple", UNSURE)]
    assert at(replace(TallyParams(), rim_share=2.0), image) == []  # without the rim's colour: dropped
    mirror, _ = draw_scene([], background=BACKGROUNDS["dark_felt"], seed=5)  # the lamp's mirror image on bare tray
    assert at(TallyParams(), _blown_top(mirror, 400.0, 300.0, 52.0, 0.3)) == []


def test_a_blown_out_die_on_a_tray_of_its_own_colour_is_not_named_by_its_rim(model_a):
    from scanner.tally import TallyReader

    image, _ = draw_scene([("green", "star", 400.0, 300.0, 52.0, 0.3)], background=BACKGROUNDS["green_felt"], seed=5)
    image = _blown_top(image, 400.0, 300.0, 52.0, 0.3)
    finder = StubFinder([_found("green", 400.0, 300.0, 52.0, 0.3)])
    at = [d for d in TallyReader(model_a, finder=finder).read(image) if math.dist(d.center, (400.0, 300.0)) < 10]
    assert [d.die for d in at] in ([], [UNSURE])


@pytest.mark.parametrize("finder_says, blue_read, named", [
    ("purple, unsure", True, "purple"),  # the blue die is read elsewhere: the purple rim is the purple die's
    # A blue die in glare shows purple on its edge too, but blue as well where it does not clip:
    # an edge with no blue at all is not the blue die's (see the test of _rim_winner above).
    ("purple, unsure", False, "purple"),
    ("up", True, "purple"),  # it sees the white top alone, and the Up Die lies elsewhere
])
def test_a_blown_out_die_the_finder_cannot_name_is_named_by_its_rim_alone(finder_says, blue_read, named, model_a):
    """The finder found a die the lamp blew out white but cannot say which it is: its edge,
    turned away from the lamp, names it where it clearly shows one die's colour, which no
    other die of the frame is, and no other unread die turns into where the camera clips
    (unless none of that die's colour shows there)."""
    from scanner.tally import TallyReader

    layout = [("purple", "star", 400.0, 300.0, 52.0, 0.3), ("up", "+2", 600.0, 500.0, 52.0, 0.4)]
    layout += [("blue", "(10)", 900.0, 300.0, 52.0, 0.2)] if blue_read else []
    image, _ = draw_scene(layout, background=BACKGROUNDS["dark_felt"], seed=5)
    image = _blown_top(image, 400.0, 300.0, 52.0, 0.3)
    guess = _found("up", 400.0, 300.0, 52.0, 0.3) if finder_says == "up" else _found("purple", 400.0, 300.0, 52.0, 0.3, sure=0.3)
    dice = TallyReader(model_a, finder=StubFinder([guess])).read(image)
    at = [(d.die, d.face) for d in dice if math.dist(d.center, (400.0, 300.0)) < 10]
    assert at == [(named, UNSURE)]
    assert ("up", "+2") in [(d.die, d.face) for d in dice]
    if blue_read:
        assert ("blue", "(10)") in [(d.die, d.face) for d in dice]


def test_the_finder_adds_nothing_where_the_blobs_found_a_die(model_a):
    from scanner.tally import TallyReader

    layout = [("orange", "20", 400.0, 300.0, 52.0, 0.3), ("purple", "star", 800.0, 400.0, 52.0, 0.1)]
    image, _ = draw_scene(layout, seed=7)
    alone = TallyReader(model_a).read(image)
    finder = StubFinder([_found("orange", 402.0, 301.0, 52.0, 0.3, cocked=0.9), _found("purple", 800.0, 400.0, 52.0, 0.1)])
    assert TallyReader(model_a, finder=finder).read(image) == alone


class CountingFinder(StubFinder):
    def __init__(self, found):
        super().__init__(found)
        self.calls = 0

    def find(self, image, half=None, threshold=None):
        self.calls += 1
        return super().find(image, half, threshold)


def test_the_finder_runs_only_where_a_die_of_the_set_is_missing_or_unread(model_a):
    from scanner.tally import TallyReader

    layout = [(die, face, 200.0 + 140.0 * index, 300.0 + 40.0 * (index % 2), 52.0, 0.2 * index)
              for index, (die, face) in enumerate([("red", "50"), ("orange", "star"), ("yellow", "20"), ("green", "30"),
                                                   ("blue", "10"), ("purple", "star"), ("up", "+3")])]
    image, _ = draw_scene(layout, seed=4)
    # An eighth square the finder is sure of: a set has seven dice, so it is never asked.
    finder = CountingFinder([_found("red", 1100.0, 600.0, 52.0, 0.0)])
    every = TallyReader(model_a, finder=finder).read(image)
    assert sorted((d.die, d.face) for d in every) == sorted((die, face) for die, face, *_ in layout)
    assert finder.calls == 0
    # One die fewer: the finder looks (once), and adds the square it is sure of.
    image, _ = draw_scene(layout[1:], seed=4)
    short = TallyReader(model_a, finder=finder).read(image)
    assert finder.calls == 1 and len(short) == 7


@pytest.mark.parametrize("print_reads", [True, False])
@pytest.mark.parametrize("named, sure", [("green", 0.4), ("blue", 0.99)])
def test_a_die_the_finder_is_unsure_of_or_names_against_its_colour_is_named_by_colour_and_print_or_not(
        named, sure, print_reads, model_a, monkeypatch):
    """The finder knows our renders' dice only: where it cannot name a die it found (or names
    another than the body colour), the user's learned colour and print name it when they
    agree, and nothing does when the print does not read."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("green", "30", 400.0, 300.0, 52.0, 0.3)], seed=6)
    blind = replace(TallyParams(), min_print_score=2.0)
    finder = StubFinder([_found(named, 400.0, 300.0, 52.0, 0.3, sure=sure)])
    reader = TallyReader(model_a, blind, finder=finder)
    if not print_reads:
        monkeypatch.setattr(reader, "_read_or_place", lambda *args, **kwargs: (UNSURE, 0.0, {}))
    dice = reader.read(image)
    assert [(d.die, d.face, d.cocked) for d in dice] == [("green", "30", False) if print_reads else (UNSURE, UNSURE, False)]


@pytest.mark.parametrize("toward_up, expected", [(0.6, ("green", "30")), (0.7, (UNSURE, UNSURE))])
def test_a_die_whose_colour_lies_nearer_another_is_named_by_the_finder_and_a_print_only_it_has(
        toward_up, expected, model_a, monkeypatch):
    """A green die paled toward the Up Die's white: its colour lies nearer the Up Die, the
    finder (not sure: 0.8) takes it for green, and its 30 is no Up Die face, so finder and
    print name it (TallyReader._named_by_print); without that rule nothing names it. Paled
    further, its colour lies beyond identity_max_distance of green's, and nothing names it."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    pale = np.uint8(toward_up * np.float32(LOOK_A.bodies["up"]) + (1 - toward_up) * np.float32(LOOK_A.bodies["green"]))
    look = replace(LOOK_A, bodies={**LOOK_A.bodies, "green": tuple(pale.tolist())})
    image, _ = draw_scene([("green", "30", 400.0, 300.0, 52.0, 0.3)], look, seed=4)
    params = replace(TallyParams(), min_print_score=2.0)  # left to the finder
    reader = TallyReader(model_a, params, finder=StubFinder([_found("green", 402.0, 299.0, 52.0, 0.3, sure=0.8)]))
    (die,) = reader.read_dice(image)
    assert (die.die, die.face) == expected
    if expected[0] != UNSURE:
        assert die.die_confidence == params.colour_print_identity_confidence
        monkeypatch.setattr(reader, "_named_by_print", lambda *args: None)
        (die,) = reader.read_dice(image)
        assert (die.die, die.face) == (UNSURE, UNSURE)


@pytest.mark.parametrize("sure, expected", [(0.8, (UNSURE, UNSURE)), (0.3, ("blue", "(10)"))])
def test_colour_and_print_do_not_name_a_die_whose_print_may_be_a_face_of_the_die_the_finder_says(
        sure, expected, model_a):
    """A purple (20) whose body lies nearer blue's colour. The print reads as blue's (10) too
    (circled numbers look alike at this size), so colour and print would name it blue (10);
    the finder (0.8) takes it for purple, and against a face of purple's the print does not
    win by the margins: unsure. Only with the finder below min_identity (0.3) do colour and
    print name it, and then wrongly: the colour's word alone."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    bluish = np.uint8(0.6 * np.float32(LOOK_A.bodies["blue"]) + 0.4 * np.float32(LOOK_A.bodies["purple"]))
    look = replace(LOOK_A, bodies={**LOOK_A.bodies, "purple": tuple(bluish.tolist())})
    image, _ = draw_scene([("purple", "(20)", 400.0, 300.0, 52.0, 0.3)], look, seed=4)
    params = replace(TallyParams(), min_print_score=2.0)  # left to the finder
    reader = TallyReader(model_a, params, finder=StubFinder([_found("purple", 402.0, 299.0, 52.0, 0.3, sure=sure)]))
    (die,) = reader.read_dice(image)
    assert (die.die, die.face) == expected


def _in_shadow(image: np.ndarray, cx: float, cy: float, side: float, factor: float) -> np.ndarray:
    """The picture with a wall's shadow (`factor` of the light) over a die and the tray round it."""
    shaded = image.astype(np.float32)
    x0, y0, x1, y1 = (int(cx - side * 1.5), int(cy - side * 1.5), int(cx + side * 1.5), int(cy + side * 1.5))
    shaded[y0:y1, x0:x1] *= factor
    return np.clip(shaded, 0, 255).astype(np.uint8)


def test_a_body_in_shadow_is_named_by_its_colour_lit_up_to_the_learned_brightness(model_a):
    from scanner.tally_colour import colour_distances, lab_of, relit_distances
    from scanner.tally_model import TallyParams

    params = TallyParams()
    for die in ("red", "orange", "yellow", "green", "blue"):
        dark = np.float32(LOOK_A.bodies[die]) * 0.3
        plain = colour_distances(lab_of(dark), model_a, params)
        relit = relit_distances(dark, model_a, params)
        assert min(relit, key=relit.__getitem__) == die, (die, relit)
        assert relit[die] < plain[die]
        # The white Up Die has only its lightness: a dark grey is not lit up into it.
        assert relit["up"] == plain["up"]


@pytest.mark.parametrize("sure, by_net", [(0.99, True), (0.55, True), (0.45, False)])
def test_a_die_in_a_wall_s_shadow_only_the_finder_found_is_named_when_net_and_colour_agree(sure, by_net, model_a):
    """Named by the finder and the colour lit up to the learned brightness; below the
    finder's min_identity, by that colour and the print (with that one's confidence)."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("orange", "star", 400.0, 300.0, 52.0, 0.3), ("blue", "20", 900.0, 400.0, 52.0, 0.2)], seed=9)
    image = _in_shadow(image, 400.0, 300.0, 52.0, 0.3)
    blind = replace(TallyParams(), min_print_score=2.0)
    finder = StubFinder([_found("orange", 400.0, 300.0, 52.0, 0.3, sure=sure)])
    (die,) = TallyReader(model_a, blind, finder=finder).read_dice(image)
    assert (die.die, die.face) == ("orange", "star")
    assert (die.die_confidence == blind.colour_print_identity_confidence) != by_net


@pytest.mark.parametrize("blobs_see_it", [True, False])
@pytest.mark.parametrize("named, sure, expected", [
    ("blue", 0.99, "blue"), ("purple", 0.99, "purple"),
    ("blue", 0.9, "blue"),  # the nearer colour (blue, by a little): two signs that agree (nearer_identity)
    ("purple", 0.9, UNSURE),  # the farther one needs the finder sure (sure_identity)
    ("blue", 0.85, UNSURE), ("green", 0.99, UNSURE)])
def test_a_sure_finder_breaks_a_tie_between_two_colours_and_nothing_else(named, sure, expected, blobs_see_it, model_a):
    from scanner.finder import FinderRules
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    between = np.uint8((np.float32(LOOK_A.bodies["blue"]) + np.float32(LOOK_A.bodies["purple"])) / 2).tolist()
    look = replace(LOOK_A, bodies={**LOOK_A.bodies, "blue": tuple(between)})
    image, _ = draw_scene([("blue", "20", 400.0, 300.0, 52.0, 0.3)], look, seed=4)
    # Found by the colour blobs, or (no blob passing the print check) by the finder alone.
    params = TallyParams() if blobs_see_it else replace(TallyParams(), min_print_score=2.0)
    if blobs_see_it:
        (alone,) = TallyReader(model_a, params).read_dice(image)
        assert alone.die == UNSURE  # the colour alone cannot tell, nor the print (20: both have it)
        assert alone.distances["blue"] < alone.distances["purple"]
    finder = StubFinder([_found(named, 402.0, 299.0, 52.0, 0.3, sure=sure)])
    (die,) = TallyReader(model_a, params, finder=finder).read_dice(image)
    if not blobs_see_it and sure < FinderRules().sure_identity:
        expected = UNSURE  # nearer_identity is for the colour blobs' dice only
    assert (die.die, die.die_confidence) == ((expected, 0.5) if expected != UNSURE else (UNSURE, 0.0))
    if blobs_see_it and expected != UNSURE:
        assert die.face == "20"


@pytest.mark.parametrize("doubt_on, expected", [("tossup", "blue"), ("green", UNSURE)])
def test_the_finder_breaks_a_tie_given_that_the_die_is_a_tally_die(doubt_on, expected, model_a):
    """The finder gives blue 0.8 and the rest to one other die. On a Toss Up die, which a
    Tally frame does not hold, that is its doubt about a look it never saw: of the Tally dice
    blue has it all, and the tie between blue and purple is broken. On the green die, blue's
    0.8 is below FinderRules.nearer_identity and the die stays unsure."""
    from scanner.finder import IDENTITIES, FoundDie
    from scanner.tally import TallyReader

    between = np.uint8((np.float32(LOOK_A.bodies["blue"]) + np.float32(LOOK_A.bodies["purple"])) / 2).tolist()
    look = replace(LOOK_A, bodies={**LOOK_A.bodies, "blue": tuple(between)})
    image, _ = draw_scene([("blue", "20", 400.0, 300.0, 52.0, 0.3)], look, seed=4)
    odds = {"blue": 0.8, doubt_on: 0.2}
    found = FoundDie((402.0, 299.0), 52.0, 0.3, 0.9, 0.0, (1.0, 0.0, 0.0), tuple(odds.get(name, 0.0) for name in IDENTITIES))
    (die,) = TallyReader(model_a, finder=StubFinder([found])).read_dice(image)
    assert (die.die, die.face) == ((expected, "20") if expected != UNSURE else (UNSURE, UNSURE))


def test_the_nearest_free_colour_must_be_one_of_the_nearest_of_all():
    from scanner.tally_colour import nearest_free
    from scanner.tally_model import TallyParams

    params = TallyParams()
    pale_orange = {"orange": 2.8, "yellow": 3.0, "red": 5.5}
    assert nearest_free(pale_orange, (), params)[0] == UNSURE  # as near yellow as orange
    assert nearest_free(pale_orange, {"yellow"}, params)[0] == "orange"  # the yellow die is elsewhere
    assert nearest_free(pale_orange, {"orange"}, params)[0] == "yellow"  # ...or the orange die is
    clearly_blue = {"blue": 1.5, "purple": 3.5, "up": 7.9}
    assert nearest_free(clearly_blue, (), params)[0] == "blue"
    # Another die holds blue: this one is blue's double, not the purple die.
    assert nearest_free(clearly_blue, {"blue"}, params)[0] == UNSURE
    assert nearest_free(clearly_blue, {"blue", "purple", "up"}, params)[0] == UNSURE


@pytest.mark.parametrize("sure", [0.7, 0.3])
@pytest.mark.parametrize("purple_elsewhere, expected", [(True, "blue"), (False, UNSURE)])
def test_a_die_the_finder_found_is_named_by_the_nearest_colour_no_other_die_of_the_frame_is(
        purple_elsewhere, expected, sure, model_a):
    """A die whose colour lies between blue and purple, which the finder takes for blue but is
    not sure of: with the purple die elsewhere in the frame only blue is left for it, and net
    and colour agree (or, the net below min_identity, colour and print do); alone, the colour
    cannot tell and the net cannot break the tie."""
    from scanner.finder import FinderRules
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    between = np.uint8((np.float32(LOOK_A.bodies["blue"]) + np.float32(LOOK_A.bodies["purple"])) / 2).tolist()
    look = replace(LOOK_A, bodies={**LOOK_A.bodies, "blue": tuple(between)})
    layout = [("blue", "20", 400.0, 300.0, 52.0, 0.3)] + ([("purple", "star", 900.0, 400.0, 52.0, 0.2)] if purple_elsewhere else [])
    image, _ = draw_scene(layout, look, seed=4)
    blind = replace(TallyParams(), min_print_score=2.0)  # every die is left to the finder
    found = [_found("blue", 402.0, 299.0, 52.0, 0.3, sure=sure)]
    if purple_elsewhere:
        found.insert(0, _found("purple", 900.0, 400.0, 52.0, 0.2))
    dice = TallyReader(model_a, blind, finder=StubFinder(found)).read_dice(image)
    (die,) = [d for d in dice if math.dist(d.blob.center, (400.0, 300.0)) < 26.0]
    assert die.die == expected
    if purple_elsewhere:
        assert [d.die for d in dice if d is not die] == ["purple"]
        assert die.face == "20"
        assert (die.die_confidence == blind.colour_print_identity_confidence) == (sure < FinderRules().min_identity)


@pytest.mark.parametrize("printed", [True, False])
def test_a_die_the_finder_found_claims_its_name_from_a_die_whose_face_was_not_read(printed, model_a):
    """A blank patch of white wall is taken for the white Up Die, face unread; the real Up Die,
    found after it, has that die's colour and the finder's word too, and its print reads: it
    takes the name and the patch is left unnamed. Without a print to read it cannot claim it."""
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    image, _ = draw_scene([("up", "+2", 400.0, 300.0, 52.0, 0.3)], seed=4)
    blanks = [(900.0, 400.0, 0.2)] + ([] if printed else [(400.0, 300.0, 0.3)])
    for cx, cy, angle in blanks:
        cv2.fillConvexPoly(image, np.int32(np.round(square(cx, cy, 52.0, angle))), LOOK_A.bodies["up"], cv2.LINE_AA)
    blind = replace(TallyParams(), min_print_score=2.0)  # every die is left to the finder
    finder = StubFinder([_found("up", 900.0, 400.0, 52.0, 0.2), _found("up", 402.0, 299.0, 52.0, 0.3)])
    dice = sorted(TallyReader(model_a, blind, finder=finder).read_dice(image), key=lambda d: d.blob.center[0])
    assert [(d.die, d.face) for d in dice] == ([("up", "+2"), (UNSURE, UNSURE)] if printed else [(UNSURE, UNSURE), ("up", UNSURE)])


def _off_blob(die: str, cx: float, cy: float, side: float, angle: float):
    """A blob of `die` whose outline took in a shadow: the die's square moved half a side."""
    from scanner.tally_blobs import Blob

    quad = square(cx + side / 2, cy + side / 3, side, angle)
    centre = quad.mean(axis=0)
    return Blob(die, quad, (float(centre[0]), float(centre[1])), side, 1.0, 1.0, np.zeros(3, np.float32))


@pytest.mark.parametrize("change, moves, face", [
    ({}, True, "(50)"),  # the finder's square on the top face: its print reads there
    ({"score": 0.25}, False, UNSURE),  # below the net's own bar for a die there (FinderRules.min_score)
    ({"identities": "orange"}, False, UNSURE),  # the net takes it for another die
    ({"shift": 60.0}, False, UNSURE),  # more than a side away: another die
    ({"shift": 20.0, "blank": True}, True, UNSURE),  # no print there, but well off the blob's
    ({"shift": 1.0, "blank": True}, False, UNSURE),  # no print there, and about where the blob is
])
def test_an_unread_die_is_read_again_on_the_finder_s_square_of_it(change, moves, face, model_a):
    """The colour blobs' outline can take in a shadow or a side face (a white Up Die on a
    white board): where its print reads as no face, the print on the square the finder found
    for the same die close by decides, and the die moves there."""
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("red", "(50)", 400.0, 300.0, 52.0, 0.3)], seed=3)
    reader = TallyReader(model_a)
    gains = balance_gains(image)
    blob = _off_blob("red", 400.0, 300.0, 52.0, 0.3)
    assert reader._read_or_place(image, gains, blob, "red", None)[0] == UNSURE
    blob = _off_blob("red", 400.0, 300.0, 52.0, 0.3)
    before = blob.center
    x, y = 400.0, 300.0
    if change.get("blank"):
        x, y = blob.center[0] + change["shift"], blob.center[1]  # a square of bare tray beside it
    elif "shift" in change:
        x = blob.center[0] + change["shift"]
    found = replace(_found(change.get("identities", "red"), x, y, 52.0, 0.3), score=change.get("score", 0.9))
    read = reader._read_where_found(image, gains, blob, "red", None, (), [found], (UNSURE, 0.0, {}))
    assert read[0] == face
    assert (blob.center != before) == moves
    if moves:
        assert math.dist(blob.center, (x, y)) < 3.0


def _read_at(die: str, face: str, cx: float, cy: float, side: float):
    from scanner.tally import DieRead
    from scanner.tally_blobs import Blob

    quad = square(cx, cy, side, 0.0)
    return DieRead(Blob(die, quad, (cx, cy), side, 1.0, 1.0, np.zeros(3, np.float32)), die, 0.9, {}, face, 0.9, {})


@pytest.mark.parametrize("speck, finder_there, kept", [
    (("up", UNSURE, 20.0), False, False),  # a plaid's square: unread, half the size, unseen by the net
    (("up", UNSURE, 20.0), True, True),  # the net sees a die there: a die
    (("up", "+2", 20.0), False, True),  # its print read: a die
    (("up", UNSURE, 36.0), False, True),  # about the dice's size: left to the other checks
])
def test_an_unread_speck_much_smaller_than_the_dice_the_finder_is_sure_of_is_no_die(speck, finder_there, kept, model_a):
    from scanner.tally import TallyReader

    reader = TallyReader(model_a)
    dice = [_read_at("red", "star", 400.0, 300.0, 40.0), _read_at(speck[0], speck[1], 800.0, 100.0, speck[2])]
    found = [_found("red", 400.0, 300.0, 40.0, 0.0)]
    if finder_there:
        found.append(replace(_found("up", 800.0, 100.0, 20.0, 0.0), score=0.35))
    left = reader._without_specks(dice, found)
    assert [d.blob.center for d in left] == [(400.0, 300.0)] + ([(800.0, 100.0)] if kept else [])
    # Without a die the net is sure of, the frame's die size is unknown: nothing is dropped.
    assert reader._without_specks(dice, [replace(found[0], score=0.5)]) == dice


#: A frame the size of the fixtures, lit alike all over: no die lies in a wall's shade.
LIT_FRAME = np.full((720, 1280, 3), 180, np.uint8)


@pytest.mark.parametrize("reading, score, kept", [
    (("up", UNSURE, 400.0, 300.0), 0.0, False),  # a light patch of tray taken for the white Up Die
    (("up", UNSURE, 400.0, 300.0), 0.25, False),  # a trace, below the net's own bar for a die
    (("up", UNSURE, 400.0, 300.0), 0.35, True),  # the net sees a die there: a die
    ((UNSURE, UNSURE, 400.0, 300.0), 0.0, False),  # unnamed, unseen
    (("red", UNSURE, 400.0, 300.0), 0.0, False),  # named by its colour, not even a trace: a square of tray
    (("red", UNSURE, 400.0, 300.0), 0.12, True),  # named by its colour, with a trace: left to the other checks
    (("up", "+2", 400.0, 300.0), 0.0, True),  # its print read: a die
    ((UNSURE, UNSURE, 400.0, 10.0), 0.9, False),  # its top face runs off the frame
])
def test_an_unread_reading_the_finder_sees_no_die_at_is_no_die(reading, score, kept, model_a):
    from scanner.tally import TallyReader

    reader = TallyReader(model_a)
    die, face, x, y = reading
    dice = [_read_at("blue", "star", 800.0, 400.0, 40.0), _read_at(die, face, x, y, 40.0)]
    # What the finder returns: every trace of at least FinderRules.shade_trace.
    traced = [replace(_found("blue", 800.0, 400.0, 40.0, 0.0), score=0.9)]
    traced += [replace(_found("up", x, y, 40.0, 0.0), score=score)] if score >= reader.finder_rules.shade_trace else []
    left = reader._without_unseen(LIT_FRAME, dice, traced)
    assert left == (dice if kept else dice[:1])
    # Before the shade pass, which may name an unnamed die, the unnamed ones are not judged.
    early = reader._without_unseen(LIT_FRAME, dice, traced, unnamed=False)
    assert early == (dice if kept or die == UNSURE and y > 20.0 else dice[:1])


def test_an_unread_die_named_by_its_colour_in_a_walls_deep_shade_is_kept_where_the_finder_sees_none(model_a):
    """The finder barely sees a die in a wall's deep shadow: such a die stays for the player to
    light that side of the tray or tap in its face, and one on the lit floor goes."""
    from scanner.tally import TallyReader

    frame = LIT_FRAME.copy()
    frame[:, :500] = 18  # the left wall's shadow, a tenth of the light
    dice = [_read_at("red", UNSURE, 250.0, 300.0, 40.0), _read_at("green", UNSURE, 900.0, 300.0, 40.0)]
    assert TallyReader(model_a)._without_unseen(frame, dice, []) == dice[:1]


def test_an_unread_up_die_of_a_set_whose_up_die_is_dark_is_kept_where_the_finder_sees_none(model_a, model_b):
    """The finder learned white Up Dice only: it cannot judge a black one."""
    from scanner.tally import TallyReader

    for model, kept in ((model_a, False), (model_b, True)):
        dice = [_read_at("up", UNSURE, 400.0, 300.0, 40.0), _read_at(UNSURE, UNSURE, 600.0, 300.0, 40.0)]
        assert TallyReader(model)._without_unseen(LIT_FRAME, dice, []) == (dice if kept else [])


def test_the_wizards_rolls_are_read_with_the_sessions_die_finder():
    from calibration.session import CalibrationSession

    # A plain tray: nothing for the colour blobs, one die for the finder, which the session's
    # Tally and Toss Up steps both read with (as the profile's scanner will).
    image = np.full((720, 1280, 3), (60, 70, 80), np.uint8)
    finder = StubFinder([_found("blue", 640.0, 360.0, 52.0, 0.2)])
    session = CalibrationSession("table", finder=finder)
    for dice_set in ("tallyup", "tossup"):
        (die,) = session.capture_roll(image, dice_set)["shot"]["dice"]
        assert math.dist(die["center"], (640.0, 360.0)) < 1.0
    assert session.finder() is finder


def _shadow_left_of(image: np.ndarray, edge_x: float, darkness: float) -> np.ndarray:
    """The photo with a straight-edged shadow (a neighbour's, the wall's) over everything left
    of `edge_x`: that part `darkness` darker, its edge soft over about a pixel."""
    light = np.where(np.arange(image.shape[1], dtype=np.float32) >= edge_x, 1.0, 1.0 - darkness).astype(np.float32)
    light = cv2.GaussianBlur(np.tile(light, (image.shape[0], 1)), (0, 0), 1.0)
    return np.clip(image * light[..., None], 0, 255).astype(np.uint8)


@pytest.mark.parametrize("ink, body, sign", [((240, 246, 246), (148, 48, 104), 1), ((28, 24, 24), (232, 238, 238), -1)])
def test_a_shadow_across_a_face_is_divided_out_and_leaves_a_lit_face_as_it_was(ink, body, sign):
    from scanner.tally_model import PATCH_SIDE, TallyParams
    from scanner.tally_prints import ink_of, shadow_flattened

    art = cv2.resize(face_art("(20)", LOOK_A), (PATCH_SIDE, PATCH_SIDE), interpolation=cv2.INTER_AREA)
    patch = (np.float32(body) * (1 - art[..., None]) + np.float32(ink) * art[..., None]).astype(np.float32)
    shaded = patch.copy()
    shaded[:, : PATCH_SIDE // 2 + 3] *= 0.4  # the left half and a bit in the shadow

    def likeness(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])

    params = TallyParams()
    truth = ink_of(patch)[0]
    assert likeness(ink_of(shaded)[0], truth) < 0.6  # the shadow's edge taken for print
    assert likeness(ink_of(shadow_flattened(shaded, sign, params))[0], truth) > 0.9
    # A face in the light only: the same print.
    assert likeness(ink_of(shadow_flattened(patch, sign, params))[0], truth) > 0.99


def test_a_face_half_in_a_shadow_is_read_with_the_shade_divided_out(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_model import TallyParams

    scenes = [(die, face) for die in ("blue", "purple") for face in FACES[die]]
    counts = {}
    for strictness in (0.0, TallyParams().flatten_strictness):
        reader = TallyReader(model_a, replace(TallyParams(), flatten_strictness=strictness))
        right = wrong = 0
        for die, face in scenes:
            image, _ = draw_scene([(die, face, 500.0, 330.0, 52.0, 0.3)], seed=3)
            reads = reader.read(_shadow_left_of(image, 508.0, 0.5))
            right += any(r.face == face for r in reads)
            wrong += any(r.face not in (face, UNSURE) for r in reads)
        counts[strictness] = (right, wrong)
    # Measured: 12 of 12 read with the shade divided out, 2 without; none wrong either way.
    (plain_right, plain_wrong), (flat_right, flat_wrong) = counts.values()
    assert flat_right >= 10 and flat_wrong == 0, counts
    assert plain_right <= 4 and plain_wrong == 0, counts


def _whitened_middle(image: np.ndarray, cx: float, cy: float, radius: float) -> np.ndarray:
    """The photo with a blown-out disc over a face's middle (glare over a white print)."""
    out = image.copy()
    cv2.circle(out, (int(cx), int(cy)), int(radius), (255, 255, 255), -1, cv2.LINE_AA)
    return out


def test_a_die_only_the_finder_found_is_named_from_its_face_s_edge_where_its_middle_is_white(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains, colour_distances, lab_of, nearest_die
    from scanner.tally_model import TallyParams
    from scanner.tally_prints import face_patch, ink_of

    image, _ = draw_scene([("blue", "20", 600.0, 350.0, 52.0, 0.2)], seed=5)
    image = _whitened_middle(image, 600.0, 350.0, 21.0)
    quad, params = square(600.0, 350.0, 52.0, 0.2), TallyParams()
    gains = balance_gains(image)
    # Over the whole face the white is the median: the face looks like the white Up Die.
    whole = ink_of(face_patch(image, quad, gains))[1]
    assert nearest_die(colour_distances(lab_of(whole), model_a, params), params)[0] == "up"
    blind = replace(params, min_print_score=2.0)  # every die left to the finder
    dice = TallyReader(model_a, blind, finder=StubFinder([_found("blue", 600.0, 350.0, 52.0, 0.2)])).read(image)
    assert [d.die for d in dice] == ["blue"]


def test_a_blob_taken_for_the_up_die_whose_face_s_edge_is_coloured_is_that_coloured_die(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_blobs import Blob
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("blue", "20", 600.0, 350.0, 52.0, 0.2), ("up", "x2", 900.0, 350.0, 52.0, 0.4)], seed=5)
    reader = TallyReader(model_a)
    gains = balance_gains(image)

    def as_up(cx: float, angle: float) -> Blob:
        quad = square(cx, 350.0, 52.0, angle)
        return Blob("up", quad, (cx, 350.0), 52.0, 0.95, 0.95, np.zeros(3, np.float32))

    renamed = reader._renamed_by_ring(image, gains, as_up(600.0, 0.2), {}, None, [])
    assert renamed is not None and renamed[0] == "blue" and renamed[2][0] == "20"
    # Not when another blob is the blue die, nor for the white Up Die itself.
    assert reader._renamed_by_ring(image, gains, as_up(600.0, 0.2), {"blue": 0.5}, None, []) is None
    assert reader._renamed_by_ring(image, gains, as_up(900.0, 0.4), {}, None, []) is None
    # A blob placed half a side off the face rings the tray; the finder's square of the
    # blue die, which the finder names, is read instead and becomes the die's top face.
    off = as_up(626.0, 0.2)
    assert reader._renamed_by_ring(image, gains, off, {}, None, []) is None
    found = [_found("blue", 601.0, 349.0, 52.0, 0.2)]
    renamed = reader._renamed_by_ring(image, gains, off, {}, None, found)
    assert renamed is not None and renamed[0] == "blue" and renamed[2][0] == "20"
    assert math.dist(off.center, (601.0, 349.0)) < 1.0
    # Not when the finder takes it for another die, or another blob is the blue die.
    assert reader._renamed_by_ring(image, gains, as_up(626.0, 0.2), {}, None, [_found("purple", 601.0, 349.0, 52.0, 0.2)]) is None
    assert reader._renamed_by_ring(image, gains, as_up(626.0, 0.2), {"blue": 0.5}, None, found) is None


def test_a_half_shaded_die_found_as_its_lit_part_is_placed_on_its_print_with_the_shade_divided_out(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_blobs import Blob
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("purple", "(20)", 500.0, 330.0, 52.0, 0.0)], seed=3)
    image = _shadow_left_of(image, 510.0, 0.6)
    gains = balance_gains(image)
    # The colour blob of the die is its lit part: a square shifted right, off the print.
    lit = square(508.0, 330.0, 48.0, 0.0)
    reader = TallyReader(model_a)
    params = reader.params
    # Neither the shade divided out on that square nor a square placed on the print as seen reads it...
    assert reader._read_face(image, gains, lit, "purple", 0.0, params.flatten_strictness, flatten=True)[0] == UNSURE
    placed = reader._placed(image, gains, lit, "purple", 52.0)
    assert reader._read_face(image, gains, placed, "purple", 0.0, params.placed_ratio)[0] == UNSURE
    # ...a square placed with the shade divided out does, and the die moves there.
    blob = Blob("purple", lit.copy(), (508.0, 330.0), 48.0, 0.95, 0.95, np.zeros(3, np.float32))
    assert reader._read_or_place(image, gains, blob, "purple", 52.0)[0] == "(20)"
    assert math.dist(blob.center, (500.0, 330.0)) < math.dist((508.0, 330.0), (500.0, 330.0))


def test_a_weak_read_on_a_square_far_smaller_than_the_finder_s_dice_is_read_again_at_their_size(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_blobs import Blob
    from scanner.tally_colour import balance_gains

    layout = [("purple", "20", 400.0, 330.0, 52.0, 0.1), ("red", "star", 600.0, 330.0, 52.0, 0.0),
              ("blue", "(10)", 800.0, 330.0, 52.0, 0.3)]
    image, _ = draw_scene(layout, seed=4)
    gains = balance_gains(image)
    reader = TallyReader(model_a)
    found = [_found(die, cx, cy, side, angle) for die, _, cx, cy, side, angle in layout]
    weak = ("star", 0.55, {})

    def small(side: float) -> Blob:  # a part of the purple die's face, off its centre
        quad = square(408.0, 324.0, side, 0.1)
        return Blob("purple", quad, (408.0, 324.0), side, 0.95, 0.95, np.zeros(3, np.float32))

    blob = small(34.0)
    assert reader._read_at_finder_size(image, gains, blob, "purple", (), found, weak)[0] == "20"
    assert blob.side == pytest.approx(52.0, abs=3.0)
    # A square about the dice's size, or a finder sure of one die only: the read stands.
    assert reader._read_at_finder_size(image, gains, small(46.0), "purple", (), found, weak) == weak
    assert reader._read_at_finder_size(image, gains, small(34.0), "purple", (), found[:1], weak) == weak


def test_the_pair_vote_on_a_white_up_die_the_camera_clipped_is_taken_on_the_middle_cut(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains
    from scanner.tally_prints import face_patch, ink_of

    image, _ = draw_scene([("up", "+100", 500.0, 330.0, 52.0, 0.3)], seed=2)
    gains, quad = balance_gains(image), square(500.0, 330.0, 52.0, 0.3)
    votes = []

    class Spy(TallyReader):
        def _pair_decision(self, ink, die, scores, params, second=None):
            votes.append(ink)
            return super()._pair_decision(ink, die, scores, params, second)

    reader = Spy(model_a)
    # Scores as close as +100's and -100's get, so that the templates leave the pair to the vote.
    reader.params = replace(reader.params, max_ratio=0.01, close_ratio=0.01)
    middle = ink_of(face_patch(image, quad, gains, reader.params.scales[len(reader.params.scales) // 2]))[0]
    reader._read_face(image, gains, quad, "up", clipped=0.9)
    assert len(votes) == 1 and np.array_equal(votes[0], middle)
    # Unclipped, it votes too (on the cut the templates chose).
    votes.clear()
    reader._read_face(image, gains, quad, "up", clipped=0.0)
    assert len(votes) == 1


def _glared(image: np.ndarray, cx: float, cy: float, side: float, angle: float) -> np.ndarray:
    """The photo with the lamp's mirror image blown over the middle of a die's top face: a
    soft-edged white square, convex like any glare patch."""
    glare = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(glare, np.int32(square(cx, cy, side * 0.6, angle)), 255)
    glare = cv2.GaussianBlur(glare, (0, 0), 2)[..., None] / 255.0
    return np.clip(image * (1 - glare) + 255 * glare, 0, 255).astype(np.uint8)


def test_a_star_is_read_only_where_its_print_s_outline_is_concave(model_a, monkeypatch):
    """Glare blown over a face is a convex blob, which a star's template matches better than
    any number's: a star read there is unsure. A printed star's points make its outline
    concave, whichever look."""
    import scanner.tally as tally
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains
    from scanner.tally_model import TallyParams
    from scanner.tally_prints import ink_solidity
    from scorekeeper.rules.dice import STAR

    limit = TallyParams().max_star_solidity
    for look in (LOOK_A, LOOK_B):
        assert ink_solidity(face_art("star", look, 32)) < limit - 0.15
    assert ink_solidity(np.pad(np.ones((16, 16), np.float32), 8)) > limit
    assert ink_solidity(np.zeros((32, 32), np.float32)) == 0.0
    # The templates made to say star, whatever they see: only the check tells the two apart.
    monkeypatch.setattr(tally, "decide_face", lambda scores, params, close=frozenset(): (STAR, 0.8, 0.9))
    reader = TallyReader(model_a)
    quad = square(640.0, 360.0, 56.0, 0.3)
    star, _ = draw_scene([("red", "star", 640.0, 360.0, 56.0, 0.3)], seed=3)
    number, _ = draw_scene([("red", "100", 640.0, 360.0, 56.0, 0.3)], seed=3)
    glared = _glared(number, 640.0, 360.0, 56.0, 0.3)
    assert reader._read_face(star, balance_gains(star), quad, "red", clipped=0.0)[0] == STAR
    assert reader._read_face(glared, balance_gains(glared), quad, "red", clipped=0.0)[0] == UNSURE


@pytest.mark.parametrize("printed, against", [("+100", True), ("-100", False)])
def test_the_strokes_a_face_differs_by_from_its_runner_up_can_overrule_it(printed, against, model_a):
    """A cut a little too large can fit -100's templates better than a +100's own, while the
    plus's upright stays where it is: a reading the vote on those strokes contradicts is
    overruled. Faces whose runner-up prints nothing like them are not put to the vote."""
    from scanner.tally import TallyReader
    from scanner.tally_model import SHIFT, TEMPLATE_SIDE
    from scanner.tally_prints import _aligned

    reader = TallyReader(model_a)
    minus, plus = (face_art(label, LOOK_A, TEMPLATE_SIDE) for label in ("-100", "+100"))
    reader.compiled.pairs["up"][("-100", "+100")] = (minus, _aligned(plus, minus))
    ink = np.pad(face_art(printed, LOOK_A, TEMPLATE_SIDE), SHIFT)
    params = reader.params
    assert reader._vote_against(ink, "up", "-100", {"-100": 0.9, "+100": 0.8, "+2": 0.4}, params) is against
    assert reader._vote_against(ink, "up", "-100", {"-100": 0.9, "x2": 0.8, "+100": 0.4}, params) is False
    # A runner-up far behind is no contest: not put to the vote.
    assert reader._vote_against(ink, "up", "-100", {"-100": 0.95, "+100": 0.5, "+2": 0.4}, params) is False


def test_the_vote_against_a_reading_is_taken_on_the_middle_cut(model_a):
    from scanner.tally import TallyReader
    from scanner.tally_colour import balance_gains
    from scanner.tally_prints import face_patch, ink_of

    image, _ = draw_scene([("red", "100", 640.0, 360.0, 56.0, 0.3)], seed=3)
    gains, quad = balance_gains(image), square(640.0, 360.0, 56.0, 0.3)
    seen = []

    class Overruled(TallyReader):
        def _vote_against(self, ink, die, face, scores, params):
            seen.append((ink, face))
            return True

    reader = Overruled(model_a)
    middle = ink_of(face_patch(image, quad, gains, reader.params.scales[len(reader.params.scales) // 2]))[0]
    assert TallyReader(model_a)._read_face(image, gains, quad, "red", clipped=0.0)[0] == "100"
    assert reader._read_face(image, gains, quad, "red", clipped=0.0)[0] == UNSURE
    assert len(seen) == 1 and seen[0][1] == "100" and np.array_equal(seen[0][0], middle)


def _clipped_holder(model_a, clipped: float):
    """A frame with an orange die (star) and the yellow die (20), where the blobs took the
    orange die, clipped to yellow by the lamp, for the yellow die: (reader, image, the
    reading of the orange die as yellow)."""
    from scanner.tally import DieRead, TallyReader
    from scanner.tally_blobs import Blob

    image, _ = draw_scene([("orange", "star", 400.0, 300.0, 52.0, 0.3), ("yellow", "20", 800.0, 400.0, 52.0, 0.1)], seed=4)
    yellow = np.float32(model_a.bodies["yellow"].lab)
    blob = Blob("yellow", square(400.0, 300.0, 52.0, 0.3), (400.0, 300.0), 52.0, 1.0, 0.95, yellow, clipped)
    return TallyReader(model_a), image, DieRead(blob, "yellow", 0.9, {}, "star", 0.85, {"star": 0.9})


@pytest.mark.parametrize("clipped, finder_at_holder, claimed", [
    (0.7, "orange", True),  # clipped, the finder sees an orange die there: claimed
    (0.1, "orange", False),  # the holder is not clipped: its colour is the yellow die's own
    (0.7, "yellow", False),  # the finder too takes the holder for the yellow die
])
def test_a_die_whose_colour_a_clipped_blob_took_claims_it_back(clipped, finder_at_holder, claimed, model_a):
    """Clipping turns an orange die yellow, and it takes the yellow die's place; the yellow
    die, found by the finder, is then left unnamed. Where its colour, the finder and its print
    say yellow, it is the yellow die, and the clipped blob is read again as the die clipping
    turns yellow: orange."""
    from scanner.tally_colour import balance_gains

    reader, image, holder = _clipped_holder(model_a, clipped)
    gains = balance_gains(image)
    yellow_die = _found("yellow", 800.0, 400.0, 52.0, 0.1)
    found = [yellow_die, _found(finder_at_holder, 400.0, 300.0, 52.0, 0.3)]
    quad = np.float32(yellow_die.corners())
    blob = type(holder.blob)("unsure", quad, yellow_die.center, yellow_die.side, 1.0, 1.0, np.zeros(3, np.float32))
    result, held = [holder], {"yellow"}
    got = reader._claimed_from_clipped(image, gains, yellow_die, blob, reader._body_distances(image, gains, quad),
                                       result, held, found, None)
    if not claimed:
        assert got is None and result == [holder] and held == {"yellow"}
        return
    name, confidence, (face, face_confidence, _) = got
    assert (name, face) == ("yellow", "20") and 0.0 < confidence <= reader.params.colour_print_identity_confidence
    assert (result[0].die, result[0].face) == ("orange", "star") and held == {"yellow", "orange"}
    assert 0.0 < result[0].confidence <= reader.params.colour_print_identity_confidence


@pytest.mark.parametrize("finder_at_holder, sure, to_yellow, claimed", [
    ("yellow", 0.99, 3.5, True),  # the finder sure of both, the colour near enough: swapped
    ("orange", 0.99, 3.5, False),  # the finder too takes the holder for the orange die
    ("yellow", 0.9, 3.5, False),  # the finder not sure enough (FinderRules.sure_identity)
    ("yellow", 0.99, 6.0, False),  # the holder's colour too far from the yellow die's
])
def test_a_die_whose_name_a_lamp_shifted_neighbour_took_claims_it(finder_at_holder, sure, to_yellow, claimed, model_a):
    """Under a very warm lamp the yellow die's colour moves onto the orange die's: its blob is
    named orange, and the orange die, found by the finder only, is left unnamed. Where the
    finder is sure of both, the holder's colour lies near the yellow die's and both prints read
    as the swapped dice's faces, the two are named so."""
    from scanner.tally import FINDER_CHOICE_CONFIDENCE, DieRead, TallyReader
    from scanner.tally_blobs import Blob
    from scanner.tally_colour import balance_gains

    image, _ = draw_scene([("yellow", "star", 400.0, 300.0, 52.0, 0.3), ("orange", "60", 800.0, 400.0, 52.0, 0.1)], seed=4)
    gains = balance_gains(image)
    reader = TallyReader(model_a)
    orange = np.float32(model_a.bodies["orange"].lab)
    held_blob = Blob("orange", square(400.0, 300.0, 52.0, 0.3), (400.0, 300.0), 52.0, 1.0, 0.95, orange)
    holder = DieRead(held_blob, "orange", 0.8, {"orange": 1.7, "yellow": to_yellow, "red": 4.7}, "star", 0.8, {"star": 0.9})
    orange_die = _found("orange", 800.0, 400.0, 52.0, 0.1, sure=sure)
    found = [orange_die, _found(finder_at_holder, 401.0, 299.0, 52.0, 0.3, sure=sure)]
    blob = Blob(UNSURE, np.float32(orange_die.corners()), orange_die.center, orange_die.side, 1.0, 1.0, np.zeros(3, np.float32))
    result, held = [holder], {"orange"}
    got = reader._claimed_from_shifted(image, gains, orange_die, blob, result, held, found, None)
    if not claimed:
        assert got is None and result == [holder] and held == {"orange"} and held_blob.center == (400.0, 300.0)
        return
    name, confidence, (face, _, _) = got
    assert (name, face, confidence) == ("orange", "60", FINDER_CHOICE_CONFIDENCE)
    assert (result[0].die, result[0].face, result[0].die_confidence) == ("yellow", "star", FINDER_CHOICE_CONFIDENCE)
    assert 0.0 < result[0].confidence <= FINDER_CHOICE_CONFIDENCE and held == {"orange", "yellow"}


@pytest.mark.parametrize("net_reads, expected", [("+100", "+100"), ("-100", UNSURE), (None, UNSURE)])
def test_where_the_chosen_cut_cannot_tell_two_similar_prints_a_clear_middle_cut_and_the_net_decide(
        net_reads, expected, model_a):
    """The chosen cut's vote leans one way but not clearly (a cut larger than the face lays the
    plus's upright off the strokes weighed): the middle cut's clear vote decides, if the face
    net reads the same face; a net that reads the other face, or no net, leaves it unsure."""
    from scanner.tally import TallyReader
    from scanner.tally_model import SHIFT, TEMPLATE_SIDE
    from scanner.tally_prints import _aligned, pair_vote

    reader = TallyReader(model_a)
    plus, minus = (face_art(label, LOOK_A, TEMPLATE_SIDE) for label in ("+100", "-100"))
    reader.compiled.pairs["up"][("+100", "-100")] = (plus, _aligned(minus, plus))
    clear = np.pad(plus, SHIFT)
    blurred = np.pad(0.65 * plus + 0.35 * _aligned(minus, plus), SHIFT)  # the upright faint
    scores = {"+100": 0.9, "-100": 0.88, "+2": 0.3}
    params = reader.params
    assert reader._pair_decision(blurred, "up", scores, params) == (UNSURE, 0.0)
    pair = reader.compiled.pairs["up"][("+100", "-100")]
    assert 0.5 < pair_vote(blurred, *pair, params.pair_difference) < params.pair_vote
    if net_reads is not None:
        reader._codes = {"up": ([net_reads], np.ones((1, 1), np.float32))}
        reader.face_net = type("Net", (), {"codes": staticmethod(lambda inks: np.ones((len(inks), 1), np.float32))})()
    face, confidence = reader._pair_decision(blurred, "up", scores, params, second=clear)
    assert face == expected
    assert confidence == (params.second_cut_confidence if expected != UNSURE else 0.0)
    # A clear vote on the chosen cut needs no second look.
    assert reader._pair_decision(clear, "up", scores, params, second=blurred)[0] == "+100"


def test_ink_whiteness_tells_a_white_print_from_the_bodys_own_colour_brighter():
    from scanner.tally_prints import ink_whiteness

    yellow = np.float32([40, 190, 220])  # BGR
    assert ink_whiteness(yellow, np.float32([235, 240, 240])) > 0.6
    assert ink_whiteness(yellow, yellow * 1.8) < 0.05
    assert ink_whiteness(yellow, yellow * 0.4) < 0.05
    assert ink_whiteness(np.float32([200, 200, 200]), np.float32([30, 30, 30])) < 0.05
    assert ink_whiteness(yellow, yellow) == 0.0
