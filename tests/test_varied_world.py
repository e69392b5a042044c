"""The varied world: look families, the compositor's labelled photos, the held-out family renders,
and the unseen-look benchmark's scoring."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from fixtures.studio import families
from lab import bench_unseen, composite, label_check
from scanner.frames import UNSURE, DieReading
from scanner.labels import LabelledDie, LabelledPhoto
from scorekeeper.rules.dice import TALLY_FACES, UP_FACES

FIX = Path(__file__).resolve().parents[1] / "fixtures"
FACES = {"tossup": {"green", "yellow", "red"}, "d6": set("123456"),
         **{die: set(faces) for die, faces in TALLY_FACES.items()}, "up": set(UP_FACES)}


def _check_label(label: dict, width: int, height: int, where: str) -> None:
    for i, die in enumerate(label["dice"]):
        assert die["face"] in FACES[die["die"]], f"{where} die {i}: {die['die']} has no face {die['face']!r}"
        pts = np.array(die["corners"], float)
        assert pts.shape == (4, 2) and isinstance(die["cocked"], bool), f"{where} die {i}"
        area2 = sum(pts[k, 0] * pts[(k + 1) % 4, 1] - pts[(k + 1) % 4, 0] * pts[k, 1] for k in range(4))
        assert area2 > 0, f"{where} die {i}: corners not clockwise"
        assert cv2.pointPolygonTest(pts.astype(np.float32), tuple(map(float, die["center"])), False) >= 0, \
            f"{where} die {i}: centre outside its top face"
        x, y = die["center"]
        assert 0 <= x < width and 0 <= y < height, f"{where} die {i}: centre outside the frame"


# ----------------------------------------------------------------------------- families


def test_families_split_sixty_to_learn_from_and_twenty_held_out():
    assert len(families.families("learn")) >= 60
    assert len(families.families("unseen")) >= 20
    assert set(families.families("learn")).isdisjoint(families.families("unseen"))


def test_the_split_written_in_the_repository_is_the_one_drawn():
    written = json.loads((FIX / "families.json").read_text())
    assert written == families.splits_document()


def test_a_family_draws_all_four_parts_of_a_look_the_same_every_time():
    first, again = families.draw_family(7), families.draw_family(7)
    assert first == again
    assert {"tossup_look", "tally_look", "surface", "tray", "light", "camera"} <= set(first)
    draws = [families.draw_family(i) for i in range(families.N_FAMILIES)]
    # the world is varied: many trays, lamps and cameras, not one look
    assert len({d["surface"]["kind"] for d in draws}) >= 8
    assert {len(d["light"]["lamps"]) for d in draws} == {1, 2, 3}
    kelvins = [lamp["kelvin"] for d in draws for lamp in d["light"]["lamps"]]
    assert min(kelvins) < 3200 and max(kelvins) > 6000
    widths = {d["camera"]["width"] for d in draws}
    assert min(widths) == 640 and max(widths) == 1920
    assert len({d["tally_look"]["font"] for d in draws}) >= 3
    families.tossup_look(first), families.tally_look(first)  # both build


def test_a_held_out_family_is_never_composited():
    unseen = families.families("unseen")[0]
    with pytest.raises(ValueError, match="held out"):
        composite.make_photo(unseen, "tossup", 0)


# ----------------------------------------------------------------------------- the compositor


@pytest.fixture(scope="module")
def composited(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("composite")
    writer = composite.PhotoWriter(out)
    learn = families.families("learn")

    def die_pixels(index: int) -> float:  # about how wide a die looks from the family's camera
        family = families.draw_family(index)
        camera, tray = family["camera"], family["tray"]
        return camera["width"] * 0.016 / (tray["inner_w"] * (1 + camera["margin"]))

    # Three families of frames up to 1280 px whose dice look largest: a print is checked only on
    # a face of MIN_PRINT_SIDE_PX or more. Photo n is of family learn[n % len(learn)], its dice
    # set turning every len(learn) photos: three photos of each set for each family.
    chosen = sorted((i for i in learn if families.draw_family(i)["camera"]["width"] <= 1280), key=die_pixels)[-3:]
    for family in chosen:
        for k in range(9):
            writer(learn.index(family) + k * len(learn))
    return out


def test_composited_labels_are_well_formed(composited: Path):
    photos = sorted(composited.glob("*/*.json"))
    assert len(photos) == 27
    sets = set()
    for path in photos:
        label = json.loads(path.read_text())
        image = cv2.imread(str(path.with_name(label["image"])), cv2.IMREAD_COLOR)
        assert image is not None
        _check_label(label, image.shape[1], image.shape[0], path.name)
        assert label["scene"]["split"] == "learn"
        sets.add(label["dice_set"])
    assert sets == {"tossup", "tallyup", "any"}


def test_composited_faces_look_like_their_labels(composited: Path):
    # A label whose face or corners were wrong would agree about as often as chance (one face
    # in three to six); the faces drawn agree nearly always, prints at the size they are drawn
    # a little less (a small 60 and 70 look alike).
    for dice_set, least in (("tossup", 0.9), ("d6", 0.85), ("tallyup", 0.7)):
        verdict = label_check.check_folder(composited / dice_set)
        assert verdict.checked >= 8, dice_set
        assert verdict.share >= least, (dice_set, verdict.share, verdict.disagreements[:5])


def test_a_photo_is_the_same_every_time_it_is_made():
    first, label = composite.make_photo(0, "tallyup", 5)
    again, label_again = composite.make_photo(0, "tallyup", 5)
    assert label == label_again
    assert np.array_equal(first, again)


def test_leaning_dice_are_labelled_cocked():
    rng = np.random.default_rng(0)
    family = families.draw_family(0)
    kinds = composite.family_kinds(family, rng)
    dice = composite.place_dice([kinds["tossup"]] * 10, family["tray"], 0.016, rng, lean_share=0.5)
    leaning = [d for d in dice if d.leaning]
    assert leaning and len(leaning) < len(dice)
    for die in dice:
        _, tilt = die.up_face()
        assert (tilt > composite.COCKED_TILT_DEG) == die.leaning
        assert min(die.corners()[:, 2]) == pytest.approx(0.0, abs=1e-9)  # resting on the floor


# ----------------------------------------------------------------------------- held-out renders


FAMILY_LABELS = sorted((FIX / "families").glob("*/*.json"))


def test_held_out_renders_are_labelled_and_held_out():
    assert FAMILY_LABELS, "no held-out family renders in fixtures/families"
    for path in FAMILY_LABELS:
        label = json.loads(path.read_text())
        assert label["scene"]["split"] == "unseen", path.name
        assert families.family_split(int(label["scene"]["family"][3:])) == "unseen"
        image = cv2.imread(str(path.with_name(label["image"])), cv2.IMREAD_COLOR)
        assert image is not None, path.name
        assert [image.shape[1], image.shape[0]] == label["scene"]["resolution"]
        _check_label(label, image.shape[1], image.shape[0], path.name)


def test_held_out_renders_show_their_labelled_faces():
    verdict = label_check.Verdict(0, 0, [])
    for folder in ("tossup", "tallyup", "tallyup-teach"):
        label_check.check_folder(FIX / "families" / folder, verdict)
    assert verdict.checked >= 10
    assert verdict.share >= 0.85, verdict.disagreements[:5]


# ----------------------------------------------------------------------------- the benchmark's scoring


def _die(face: str, x: float, die: str = "tossup", cocked: bool = False, side: float = 30.0) -> LabelledDie:
    h = side / 2
    return LabelledDie(die, face, (x, 50.0), ((x - h, 50 - h), (x + h, 50 - h), (x + h, 50 + h), (x - h, 50 + h)), cocked)


def _reading(face: str | None, x: float, die: str = "tossup", confidence: float = 0.9, cocked: bool = False) -> DieReading:
    return DieReading(center=(x, 50.0), corners=(), die=die, face=face, confidence=confidence, cocked=cocked, size=30.0)


def _photo(dice, scene=None) -> LabelledPhoto:
    return LabelledPhoto(Path("p.jpg"), "tossup", tuple(dice), scene or {})


def test_unseen_card_counts_faces_unsure_wrong_and_misses():
    image = np.full((100, 400, 3), 180, np.uint8)
    labels = [_die("green", 40), _die("red", 100), _die("yellow", 160), _die("green", 220, cocked=True), _die("red", 300)]
    readings = [_reading("green", 41), _reading(UNSURE, 101), _reading("red", 161, confidence=0.7),
                _reading("green", 221, cocked=True), _reading("red", 380)]
    card = bench_unseen.UnseenCard()
    card.add("p", _photo(labels), image, readings)
    figures = card.figures()
    assert figures["recall"] == pytest.approx(4 / 5)
    assert figures["precision"] == pytest.approx(4 / 5)
    assert figures["faces"] == pytest.approx(1 / 3)
    assert figures["unsure"] == pytest.approx(1 / 3)
    assert figures["wrong_scored"] == pytest.approx(1 / 3)
    assert figures["cocked_flagged"] == 1.0 and figures["flat_flagged"] == 0.0
    assert figures["identity"] is None  # Toss Up dice are all alike


def test_a_face_nobody_can_read_is_right_unsure_and_wrong_read():
    image = np.full((100, 400, 3), 180, np.uint8)
    scene = {"glare_fraction": [0.9, 0.9, 0.0]}
    labels = [_die("green", 40), _die("red", 100), _die("yellow", 160)]
    card = bench_unseen.UnseenCard()
    card.add("p", _photo(labels, scene), image,
             [_reading(UNSURE, 40), _reading("red", 100), _reading("yellow", 160)])
    figures = card.figures()
    assert figures["unreadable"] == 2 and card.unreadable_unsure == 1
    assert figures["faces"] == 1.0  # the readable one; the others are left out of faces
    assert figures["wrong_scored"] == pytest.approx(1 / 3)  # a blown-out face read as a face
    dark = np.zeros((100, 400, 3), np.uint8)
    assert bench_unseen.unreadable_cause(labels[2], 2, {}, dark, "tossup") == "shade"
    assert bench_unseen.unreadable_cause(_die("50", 40, "red", side=10), 0, {}, image, "tallyup") == "small"
    assert bench_unseen.unreadable_cause(labels[2], 2, {"visible_fraction": [1, 1, 0.2]}, image, "tossup") == "covered"


def test_expected_calibration_error():
    honest = [(0.75, k < 3) for k in range(4)] + [(0.95, True)] * 19 + [(0.95, False)]
    assert bench_unseen.expected_calibration_error(honest) == pytest.approx(0.0, abs=1e-9)
    sure_but_wrong = [(0.99, k % 2 == 0) for k in range(10)]
    assert bench_unseen.expected_calibration_error(sure_but_wrong) == pytest.approx(0.49)
    assert bench_unseen.expected_calibration_error([]) is None
    rows = bench_unseen.reliability(honest)
    assert [row[2] for row in rows] == [4, 20]


def test_real_photo_readings_match_boxes_once_and_other_dice_are_neither():
    dice = [bench_unseen.RealDie((10, 10, 50, 50), "d6"), bench_unseen.RealDie((100, 10, 140, 50), "d6"),
            bench_unseen.RealDie((200, 10, 240, 50), "other")]
    found, false, on_other = bench_unseen.match_boxes(dice, [(30, 30), (32, 30), (220, 30), (400, 400)])
    assert (found, false, on_other) == (1, 2, 1)


def test_bench_unseen_prints_its_figures_and_json(tmp_path: Path):
    from click.testing import CliRunner

    from scorekeeper.cli import main

    source = next((p for p in FAMILY_LABELS if p.parent.name == "tossup"), None)
    assert source is not None
    (tmp_path / "families" / "tossup").mkdir(parents=True)
    for suffix in (".json", ".jpg"):
        (tmp_path / "families" / "tossup" / f"{source.stem}{suffix}").write_bytes(source.with_suffix(suffix).read_bytes())
    result = CliRunner().invoke(main, ["bench", "scanner", "--split", "unseen", "--dice", "tossup", "--json",
                                       "--fixtures", str(tmp_path)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert figures["looks_trained"] >= 60 and figures["looks_unseen"] >= 20
    assert set(figures["tossup"]) == {"recall", "precision", "faces", "identity", "unsure", "wrong_scored", "ece",
                                      "speed_lab_ratio"}
    assert 0 <= figures["tossup"]["recall"] <= 1 and figures["tossup"]["speed_lab_ratio"] > 0
    assert figures["tallyup"]["recall"] is None and figures["real"]["recall"] is None
    assert "held-out families" in result.output and "reliability" in result.output


def test_the_committed_sample_is_what_the_compositor_makes_today():
    """fixtures/composite-sample: a few of `python -m lab.composite`'s photos. Made again they
    carry the same labels and, but for the JPEG's loss, the same pixels."""
    samples = sorted((FIX / "composite-sample").glob("*.json"))
    assert len(samples) >= 6
    for path in samples:
        label = json.loads(path.read_text())
        _, family, dice_set, n = path.stem.split("-")
        bgr, made = composite.make_photo(int(family[3:]), dice_set, int(n))
        assert made["dice"] == label["dice"], path.name
        committed = cv2.imread(str(path.with_suffix(".jpg")), cv2.IMREAD_COLOR)
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, label["scene"]["jpeg_quality"]])
        again = cv2.imdecode(data, cv2.IMREAD_COLOR)
        assert committed.shape == again.shape
        # another libjpeg or CPU may round a little differently; another picture differs by far more
        assert float(np.abs(committed.astype(np.float32) - again).mean()) < 1.5, path.name
