"""The face net: how its training cuts dice, how its codes are taught and stored, and how the
Tally reader weighs it against the templates."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from scanner.face_net import CODE_SIZE, NO_FACE, FaceNet, unit_rows
from scanner.face_training import CLASSES, FACE_LABELS, FaceExample, dataset, jittered, load_face_examples, shadowed
from scanner.frames import UNSURE
from scanner.tally import TallyReader, code_twins
from scanner.tally_model import PATCH_SIDE, TallyParams, model_from_json
from scanner.tally_prints import distance_ratio

from tests.test_tally_synthetic import FACES, LOOK_A, draw_scene, random_layout


def _labelled_still(folder: Path, name: str, split: str, dice: list[dict], scene: dict | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(folder / f"{name}.jpg"), np.full((200, 300, 3), 90, np.uint8))
    (folder / f"{name}.json").write_text(json.dumps({"image": f"{name}.jpg", "dice_set": "tallyup", "dice": dice,
                                                     "scene": {"split": split, **(scene or {})}}))


def _die(face: str = "star", cocked: bool = False, x: float = 100.0) -> dict:
    return {"die": "red", "face": face, "center": [x, 100], "corners": [[x - 20, 80], [x + 20, 80], [x + 20, 120], [x - 20, 120]],
            "cocked": cocked}


def test_training_cuts_the_flat_visible_dice_of_dev_teach_lean_and_facemore_never_the_test_split(tmp_path):
    _labelled_still(tmp_path / "tallyup", "tallyup-s00-r00", "dev", [_die(), _die("50", cocked=True, x=200)])
    _labelled_still(tmp_path / "tallyup", "tallyup-s01-r00", "test", [_die()])
    _labelled_still(tmp_path / "tallyup-teach", "teach-s00-r00", "teach", [_die("100"), _die("50", x=200)],
                    {"visible_fraction": [1.0, 0.5]})
    _labelled_still(tmp_path / "lean" / "tallyup", "lean-tallyup-s00-r00", "lean", [_die("(50)")])
    # A face the glare blew out shows no print: taught as no face, whatever its label says.
    _labelled_still(tmp_path / "facemore" / "tallyup", "facemore-tallyup-s00-r00", "facemore",
                    [_die("50"), _die("(50)", x=200)], {"glare_fraction": [0.2, 0.8]})
    _labelled_still(tmp_path / "facemore" / "tallyup", "facemore-tallyup-s01-r00", "facemore",
                    [{**_die("+1"), "die": "up"}], {"glare_fraction": [0.9]})
    up_die = cv2.imread(str(tmp_path / "facemore" / "tallyup" / "facemore-tallyup-s01-r00.jpg"))
    cv2.rectangle(up_die, (80, 80), (120, 120), (255, 255, 255), -1)
    cv2.line(up_die, (92, 100), (108, 100), (20, 20, 20), 3)
    cv2.line(up_die, (100, 92), (100, 108), (20, 20, 20), 3)
    cv2.imwrite(str(tmp_path / "facemore" / "tallyup" / "facemore-tallyup-s01-r00.jpg"), up_die)
    examples = load_face_examples(tmp_path)
    assert sorted((e.name, e.face) for e in examples if e.die == "red") == [
        ("facemore-tallyup-s00-r00.jpg#0", "50"), ("facemore-tallyup-s00-r00.jpg#1", NO_FACE),
        ("lean-tallyup-s00-r00.jpg#0", "(50)"), ("tallyup-s00-r00.jpg#0", "star"), ("teach-s00-r00.jpg#0", "100")]
    # A dark print (the white Up Die's) stays where glare clips the body around it: taught as labelled.
    assert [(e.name, e.face, e.ink_sign) for e in examples if e.die == "up"] == [("facemore-tallyup-s01-r00.jpg#0", "+1", -1)]
    # The crop holds the die: its corners, in crop pixels, lie inside it.
    for example in examples:
        height, width = example.crop.shape[:2]
        assert (example.corners >= 0).all() and (example.corners[:, 0] < width).all() and (example.corners[:, 1] < height).all()


def test_jittered_squares_lie_on_the_face_and_off_ones_miss_its_print():
    corners = np.float32([(100, 100), (140, 100), (140, 140), (100, 140)])
    rng = np.random.default_rng(3)
    for _ in range(200):
        near = jittered(rng, corners)
        far = jittered(rng, corners, off=True)
        assert math.dist(near.mean(axis=0), (120, 120)) <= 0.15 * 40 * math.sqrt(2) + 1e-3
        assert 0.4 * 40 - 1e-3 <= math.dist(far.mean(axis=0), (120, 120)) <= 0.7 * 40 + 1e-3
        side = float(np.mean(np.linalg.norm(near - np.roll(near, 1, axis=0), axis=1)))
        assert 0.85 * 40 - 1e-3 <= side <= 1.45 * 40 + 1e-3


def test_a_dataset_holds_each_die_s_cuts_and_its_off_cuts():
    image, labels = draw_scene([("red", "50", 150.0, 150.0, 52.0, 0.2)], seed=1)
    crop = image[50:250, 50:250].copy()
    example = FaceExample(crop, np.float32(labels[0].corners) - np.float32([50, 50]), np.ones(3, np.float32), "red", "50", "x")
    inputs, classes = dataset(np.random.default_rng(0), [example, example], per_example=3, off_per_example=2)
    assert inputs.shape == (10, 1, PATCH_SIDE, PATCH_SIDE) and inputs.dtype == np.float32
    assert [CLASSES[c] for c in classes] == ["50"] * 3 + [NO_FACE] * 2 + ["50"] * 3 + [NO_FACE] * 2
    assert 0.0 <= inputs.min() and inputs.max() <= 1.0 and inputs[0].std() > 0.1  # a print, not a blank
    assert set(FACE_LABELS) == {face for faces in FACES.values() for face in faces}


def test_a_shadow_cast_in_training_darkens_one_side_of_a_line_across_the_die():
    crop = np.full((100, 100, 3), 200, np.uint8)
    corners = np.float32([(30, 30), (70, 30), (70, 70), (30, 70)])
    rng = np.random.default_rng(5)
    inside = np.zeros((100, 100), bool)
    inside[30:70, 30:70] = True
    for _ in range(50):
        shaded = shadowed(rng, crop, corners)[..., 0].astype(np.float32)
        assert shaded.max() >= 199 and shaded.min() >= 0.25 * 200 - 1
        # Both the light and the shadow fall on the top face.
        assert shaded[inside].max() >= 0.95 * 200 and shaded[inside].min() <= 0.85 * 200


def test_each_die_s_print_counts_as_lighter_or_darker_as_most_of_its_photos_show_it(tmp_path):
    folder = tmp_path / "tallyup"
    folder.mkdir()
    for index, seed in enumerate((1, 2, 3)):
        image, labels = draw_scene([("red", "50", 300.0, 300.0, 52.0, 0.2), ("up", "+3", 700.0, 300.0, 52.0, 0.4)], seed=seed)
        cv2.imwrite(str(folder / f"tallyup-s00-r0{index}.jpg"), image)
        dice = [{"die": d.die, "face": d.face, "center": list(d.center), "corners": [list(c) for c in d.corners],
                 "cocked": False} for d in labels]
        (folder / f"tallyup-s00-r0{index}.json").write_text(json.dumps(
            {"image": f"tallyup-s00-r0{index}.jpg", "dice_set": "tallyup", "dice": dice, "scene": {"split": "dev"}}))
    signs = {(e.die, e.ink_sign) for e in load_face_examples(tmp_path)}
    assert signs == {("red", 1), ("up", -1)}  # white print on red, dark print on the white Up Die


def test_a_missing_face_net_says_how_to_train_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="face_training"):
        FaceNet(tmp_path / "none.onnx")


def test_the_shipped_net_gives_unit_codes_one_per_print():
    net = FaceNet()
    inks = [np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32), np.eye(PATCH_SIDE, dtype=np.float32)]
    codes = net.codes(inks)
    assert codes.shape == (2, CODE_SIZE)
    assert np.allclose(np.linalg.norm(codes, axis=1), 1.0, atol=1e-4)
    assert net.codes([]).shape == (0, CODE_SIZE)
    assert len(net.fingerprint) == 12


@pytest.fixture(scope="module")
def model_a():
    from tests.test_tally_synthetic import _model_for

    return _model_for(LOOK_A)


def test_teaching_stores_a_code_for_every_face_taught_and_for_no_face(model_a):
    taught = {face for faces in FACES.values() for face in faces}
    assert set(model_a.codes) == taught | {NO_FACE}
    assert model_a.code_net == FaceNet().fingerprint
    for code in model_a.codes.values():
        assert len(code) == CODE_SIZE and math.isclose(float(np.linalg.norm(code)), 1.0, abs_tol=1e-3)
    assert model_from_json(json.loads(json.dumps(model_a.to_json()))) == model_a


@pytest.mark.parametrize("change, field", [
    ({"codes": {"star": [0.1] * 3}}, "codes.star"),
    ({"codes": {"seven": [0.1] * CODE_SIZE}}, "codes"),
    ({"codes": [1, 2]}, "codes"),
    ({"code_net": ""}, "code_net"),
])
def test_a_damaged_code_names_its_field(change, field, model_a):
    data = {**model_a.to_json(), **change}
    with pytest.raises(ValueError, match=field):
        model_from_json(data)


def test_codes_another_net_made_are_not_used(model_a, caplog):
    stale = replace(model_a, code_net="0123456789ab")
    with caplog.at_level(logging.WARNING, logger="scanner.tally"):
        reader = TallyReader(stale, face_net=FaceNet())
    assert "teach the dice again" in caplog.text
    image, _ = draw_scene([("red", "50", 400.0, 300.0, 52.0, 0.2)], seed=2)
    assert reader.read(image) == TallyReader(stale).read(image)  # templates only


def _face_reads(reader: TallyReader, seeds: range) -> tuple[int, int, int]:
    right = wrong = unsure = 0
    for seed in seeds:
        layout = random_layout(np.random.default_rng(seed))
        image, labels = draw_scene(layout, seed=seed)
        for label in labels:
            read = min(reader.read_dice(image), key=lambda d: math.dist(d.blob.center, label.center))
            if math.dist(read.blob.center, label.center) > 10 or read.die != label.die:
                continue
            right += read.face == label.face
            unsure += read.face == UNSURE
            wrong += read.face not in (label.face, UNSURE)
    return right, wrong, unsure


def test_where_the_templates_cannot_tell_the_net_reads_the_print(model_a):
    # Templates that never win (a bar no correlation reaches): every face read is the net's.
    blind = replace(TallyParams(), min_score=2.0, pair_vote=2.0, clipped_pair_vote=2.0)
    right, wrong, unsure = _face_reads(TallyReader(model_a, blind, face_net=FaceNet()), range(4))
    # Measured: 16 of 28 drawn dice read, none wrong (the net never saw this font; it must read
    # every scale alike and by a wide margin, so it leaves many unsure rather than guess).
    assert right >= 0.5 * (right + wrong + unsure) and wrong == 0, (right, wrong, unsure)
    assert _face_reads(TallyReader(model_a, blind), range(4))[0] == 0  # without it, nothing is read


class TurnedNet:
    """A face net whose every code is the taught code of one face (a net that misreads)."""

    def __init__(self, model, face: str):
        self.fingerprint = model.code_net
        self.code = np.float32(model.codes[face])

    def codes(self, inks):
        return unit_rows(np.tile(self.code, (len(inks), 1)))


class CyclingNet:
    """A face net whose codes for a print's cuts are the taught codes of `faces` in turn."""

    def __init__(self, model, faces):
        self.fingerprint = model.code_net
        self.codes_in_turn = [np.float32(model.codes[face]) for face in faces]
        self.calls = []

    def codes(self, inks):
        start = sum(self.calls)
        self.calls.append(len(inks))
        return unit_rows(np.stack([self.codes_in_turn[(start + i) % len(self.codes_in_turn)] for i in range(len(inks))]))


@pytest.mark.parametrize("faces, expected", [
    (["100"], "100"),
    (["100", "50"], UNSURE),  # the cuts read as two faces: the mean lies between them
    (["100"] * 3 + ["50"], "100"),  # one code in four off: the mean still lies by 100
    (["star", "50"], UNSURE),
])
def test_the_net_reads_the_mean_code_of_the_cuts_of_a_print_and_the_likeliest_turned(faces, expected, model_a):
    image, _ = draw_scene([("red", "50", 400.0, 300.0, 52.0, 0.2)], seed=2)
    blind = replace(TallyParams(), min_score=2.0, pair_vote=2.0, clipped_pair_vote=2.0, flatten_strictness=0.0)
    reader = TallyReader(model_a, blind, face_net=CyclingNet(model_a, faces))
    ink = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    assert reader._code_decision([ink] * 3, "red", blind)[0] == expected
    # The first cut alone first, then its other turns and the other scales as they are, at once.
    if expected != UNSURE:
        assert reader.face_net.calls == [1, len(blind.code_turns) - 1 + 2]


@pytest.mark.parametrize("face, codes", [("+100", 6), ("-100", 6), ("+1", 4)])
def test_every_cut_of_a_print_nearest_a_face_with_a_twin_is_read_turned_too(face, codes, model_a):
    """+100 and -100 differ by one stroke: where the first cut's code lies nearest one of
    them, the mean over every cut and turn tells them apart (TallyParams.code_turns)."""
    blind = replace(TallyParams(), min_score=2.0, pair_vote=2.0, clipped_pair_vote=2.0, flatten_strictness=0.0)
    reader = TallyReader(model_a, blind, face_net=CyclingNet(model_a, [face]))
    ink = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    reader._code_decision([ink] * 3, "up", blind)
    assert sum(reader.face_net.calls) == codes


def test_twins_are_faces_whose_taught_codes_lie_nearest_each_other_and_alike():
    faces = ["+100", "-100", "+1", NO_FACE]
    turn = 0.4  # radians between the twins: cosine 0.92
    taught = np.float32([[1, 0, 0], [np.cos(turn), np.sin(turn), 0], [0, 0, 1], [0, 0.2, 0.98]])
    assert code_twins(faces, unit_rows(taught), 0.85) == {"+100": ("-100", pytest.approx(np.cos(turn))),
                                                          "-100": ("+100", pytest.approx(np.cos(turn)))}
    assert code_twins(faces, unit_rows(taught), 0.95) == {}
    # No face is no twin, however near a face it lies.
    assert code_twins(["+1", NO_FACE, "+100"], unit_rows(taught[[2, 3, 0]]), 0.85) == {}


class FixedCodeNet:
    """A face net whose every code is `code`."""

    def __init__(self, fingerprint: str, code: np.ndarray):
        self.fingerprint = fingerprint
        self.code = np.float32(code)

    def codes(self, inks):
        return unit_rows(np.tile(self.code, (len(inks), 1)))


def _code_at(reader: TallyReader, die: str, nearest: str, second: str, to_nearest: float, to_second: float
             ) -> np.ndarray:
    """A code at the given cosines to the taught codes of `nearest` and `second`, the rest of
    it square to every taught code of `die`."""
    faces, taught = reader._codes[die]
    x, y = taught[faces.index(nearest)], taught[faces.index(second)]
    across = unit_rows((y - (y @ x) * x)[None])[0]
    along = (to_second - to_nearest * float(y @ x)) / float(np.sqrt(1 - (y @ x) ** 2))
    rest = np.random.default_rng(5).normal(size=x.shape).astype(np.float32)
    basis, _ = np.linalg.qr(taught.T)
    rest -= basis @ (basis.T @ rest)
    return to_nearest * x + along * across + np.sqrt(1 - to_nearest ** 2 - along ** 2) * unit_rows(rest[None])[0]


def _with_twins(model, alike: float):
    """`model` with the Up Die's -100 code turned to `alike` cosine of its +100 code (the
    built-in look's are 0.91 alike: their prints differ by one stroke)."""
    plus = unit_rows(np.float32([model.codes["+100"]]))[0]
    minus = np.float32(model.codes["-100"])
    across = unit_rows((minus - (minus @ plus) * plus)[None])[0]
    return replace(model, codes={**model.codes, "-100": tuple(alike * plus + np.sqrt(1 - alike ** 2) * across)})


@pytest.mark.parametrize("to_plus, to_minus, expected", [
    (0.93, 0.86, "+100"),  # clearly the nearer twin, though not by code_ratio
    (0.93, 0.91, UNSURE),  # nearly as near both
])
def test_of_two_twin_faces_the_clearly_nearer_is_read(to_plus, to_minus, expected, model_a):
    twinned = _with_twins(model_a, 0.91)
    probe = TallyReader(twinned, face_net=FixedCodeNet(twinned.code_net, np.ones(CODE_SIZE)))
    code = _code_at(probe, "up", "+100", "-100", to_plus, to_minus)
    reader = TallyReader(twinned, face_net=FixedCodeNet(twinned.code_net, code))
    params = TallyParams()
    faces, taught = reader._codes["up"]
    cosines = dict(zip(faces, (taught @ code).tolist()))
    assert cosines["+100"] == pytest.approx(to_plus, abs=1e-4) and cosines["-100"] == pytest.approx(to_minus, abs=1e-4)
    # The code_ratio alone cannot tell them; every other face lies far.
    assert distance_ratio(to_plus, to_minus) > params.code_ratio
    others = max(c for f, c in cosines.items() if f not in ("+100", "-100"))
    assert distance_ratio(to_plus, others) <= params.twin_ratio
    ink = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    face, confidence = reader._code_decision([ink] * 3, "up", params)
    assert face == expected
    assert confidence == (params.twin_confidence if expected != UNSURE else 0.0)
    # Faces that are not twins are read by code_ratio alone.
    apart = TallyReader(twinned, replace(params, twin_cosine=0.95), face_net=FixedCodeNet(twinned.code_net, code))
    assert apart._code_decision([ink] * 3, "up", params) == (UNSURE, 0.0)


@pytest.mark.parametrize("nearest, second, templates, expected", [
    ("100", "50", None, UNSURE),  # the net alone: no clear win
    ("100", "50", {"100": 0.8, "50": 0.7, "(50)": 0.4, "star": 0.3}, "100"),  # the templates lean the same way
    ("100", "50", {"50": 0.8, "100": 0.7, "(50)": 0.4, "star": 0.3}, UNSURE),  # ...the other way
    ("100", "50", {"100": 0.8, "50": 0.795, "(50)": 0.4, "star": 0.3}, UNSURE),  # ...hardly at all
    ("star", "(50)", {"star": 0.8, "(50)": 0.7, "50": 0.4, "100": 0.3}, UNSURE),  # a star never so
])
def test_a_face_the_net_nearly_reads_is_read_where_the_templates_rank_it_first(nearest, second, templates, expected,
                                                                                model_a):
    probe = TallyReader(model_a, face_net=FixedCodeNet(model_a.code_net, np.ones(CODE_SIZE)))
    code = _code_at(probe, "red", nearest, second, 0.9, 0.8)
    reader = TallyReader(model_a, face_net=FixedCodeNet(model_a.code_net, code))
    params = TallyParams()
    faces, taught = reader._codes["red"]
    cosines = sorted(zip((taught @ code).tolist(), faces), reverse=True)
    assert [face for _, face in cosines[:2]] == [nearest, second] and nearest not in reader._twins.get("red", {})
    # Between the two bars: code_ratio alone does not read it, agree_code_ratio would.
    assert params.code_ratio < distance_ratio(0.9, 0.8) <= params.agree_code_ratio
    ink = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    face, confidence = reader._code_decision([ink] * 3, "red", params, templates)
    assert (face, confidence) == ((expected, params.agree_confidence) if expected != UNSURE else (UNSURE, 0.0))
    # The bar narrows with the others (a die also told by its print, a placed square).
    if expected != UNSURE:
        assert reader._code_decision([ink] * 3, "red", reader._narrowed_params(0.8), templates) == (UNSURE, 0.0)


@pytest.mark.parametrize("shown, templates, expected", [
    ("+3", {"+3": 0.73, "+2": 0.61, "+1": 0.6, "x2": 0.55}, "+3"),  # the strokes show the +3
    ("+2", {"+3": 0.73, "+2": 0.61, "+1": 0.6, "x2": 0.55}, UNSURE),  # ...the +2's
    ("+3", {"+3": 0.73, "+1": 0.61, "+2": 0.6, "x2": 0.55}, UNSURE),  # the templates' runner-up is another face
    ("+3", {"+2": 0.73, "+3": 0.61, "+1": 0.6, "x2": 0.55}, UNSURE),  # they rank the pair the other way
])
def test_a_pair_both_readers_rank_alike_is_read_where_the_strokes_that_tell_them_apart_show_it(
        shown, templates, expected, model_a):
    # The synthetic look's +2 and +3 codes lie 0.97 alike, twins by the built-in bar (the
    # shipped look's are not): a higher bar makes them a pair only.
    params = TallyParams(twin_cosine=0.98)
    probe = TallyReader(model_a, params, face_net=FixedCodeNet(model_a.code_net, np.ones(CODE_SIZE)))
    code = _code_at(probe, "up", "+3", "+2", 0.85, 0.8)
    reader = TallyReader(model_a, params, face_net=FixedCodeNet(model_a.code_net, code))
    assert "+3" not in reader._twins["up"]
    # Too close a call for agree_code_ratio; within pair_code_ratio.
    assert params.agree_code_ratio < distance_ratio(0.85, 0.8) <= params.pair_code_ratio
    plus_three, plus_two = reader.compiled.pairs["up"][("+3", "+2")]
    ink = np.float32(plus_three if shown == "+3" else plus_two)
    face, confidence = reader._code_decision([ink] * 3, "up", params, templates)
    assert (face, confidence) == ((expected, params.agree_confidence) if expected != UNSURE else (UNSURE, 0.0))
    if expected != UNSURE:
        # Not by the net alone, nor with a pair bar below the print's ratio.
        assert reader._code_decision([ink] * 3, "up", params) == (UNSURE, 0.0)
        assert reader._code_decision([ink] * 3, "up", replace(params, pair_code_ratio=0.7), templates) == (UNSURE, 0.0)


def test_twin_faces_are_not_read_by_the_strokes_of_a_pair(model_a):
    """+100 and -100 differ by one short stroke, which a little blur or glare takes: their
    own rule (twin_ratio, twin_split) reads them, never the pair's looser bar."""
    twinned = _with_twins(model_a, 0.91)
    probe = TallyReader(twinned, face_net=FixedCodeNet(twinned.code_net, np.ones(CODE_SIZE)))
    code = _code_at(probe, "up", "+100", "-100", 0.85, 0.8)
    reader = TallyReader(twinned, face_net=FixedCodeNet(twinned.code_net, code))
    assert reader._twins["up"]["+100"][0] == "-100"
    # Not by the twins' own rule either: too near both.
    assert 0.85 - 0.8 < TallyParams().twin_split * (1.0 - 0.91)
    plus, _ = reader.compiled.pairs["up"][("+100", "-100")]
    templates = {"+100": 0.73, "-100": 0.61, "+1": 0.5, "x2": 0.45}
    params = TallyParams()
    assert reader._code_decision([np.float32(plus)] * 3, "up", params, templates) == (UNSURE, 0.0)
    # Were they not twins, the strokes would read it.
    apart = TallyReader(twinned, replace(params, twin_cosine=0.95), face_net=FixedCodeNet(twinned.code_net, code))
    assert apart._code_decision([np.float32(plus)] * 3, "up", params, templates) == ("+100", params.agree_confidence)


def test_a_print_the_first_cut_leaves_far_from_any_face_is_not_cut_again(model_a):
    net = CyclingNet(model_a, [NO_FACE])
    reader = TallyReader(model_a, face_net=net)
    ink = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    assert reader._code_decision([ink] * 3, "red", TallyParams()) == (UNSURE, 0.0)
    assert net.calls == [1]


@pytest.mark.parametrize("print_code, rivals, expected", [
    ("(20)", ["blue", "up"], True),  # a (20) however like (10) its ring makes it for the templates
    ("(10)", ["blue"], False),  # the print is the rival's own face
    ("(20)", ["blue", "unknown"], False),  # a rival the net has no codes for
])
def test_the_face_net_tells_a_print_from_dice_the_colour_cannot_where_the_templates_cannot(print_code, rivals, expected,
                                                                                             model_a):
    reader = TallyReader(model_a, face_net=TurnedNet(model_a, print_code))
    ink = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    assert reader._net_tells_apart(ink, "purple", "(20)", rivals, TallyParams()) is expected


def test_the_net_decides_only_where_the_templates_are_unsure(model_a):
    image, _ = draw_scene([("red", "50", 400.0, 300.0, 52.0, 0.2)], seed=2)
    (alone,) = TallyReader(model_a).read(image)
    assert alone.face == "50"
    (read,) = TallyReader(model_a, face_net=TurnedNet(model_a, "100")).read(image)
    assert read.face == "50"
    blind = replace(TallyParams(), min_score=2.0, pair_vote=2.0, clipped_pair_vote=2.0)
    # A star is refused on this print, whoever reads it: its outline (the 0's) is convex.
    for face, expected in (("100", "100"), ("star", UNSURE), (NO_FACE, UNSURE)):
        (die,) = TallyReader(model_a, blind, face_net=TurnedNet(model_a, face)).read(image)
        assert die.face == expected, face


@pytest.mark.parametrize("check_below, expected", [(2.0, UNSURE), (0.0, "50")])
def test_a_template_read_below_the_check_bar_is_refused_where_the_net_sees_no_face_or_another(check_below, expected,
                                                                                               model_a):
    """The templates read this 50 clearly; a net that sees no face in it, or clearly another
    face (TallyParams.net_overrule_ratio), refuses the read only where the templates' best
    correlation lies below net_check_below. With that bar off, a net that reads a 100 is no
    reason to refuse it (only no face, or the twin of the face read, is)."""
    image, _ = draw_scene([("red", "50", 400.0, 300.0, 52.0, 0.2)], seed=2)
    params = replace(TallyParams(), net_check_below=check_below)
    (die,) = TallyReader(model_a, params, face_net=TurnedNet(model_a, NO_FACE)).read(image)
    assert die.face == expected
    (die,) = TallyReader(model_a, params, face_net=TurnedNet(model_a, "100")).read(image)
    assert die.face == expected
    unclear = replace(params, net_overrule_ratio=-1.0)  # no distance ratio is below 0: never refused so
    (die,) = TallyReader(model_a, unclear, face_net=TurnedNet(model_a, "100")).read(image)
    assert die.face == "50"


def test_the_net_s_reading_is_not_put_to_the_templates_pair_vote(model_a):
    """The net reads where the templates cannot tell; their runner-up, a face of nearly the
    same print, is then no evidence against it (an Up Die's x2 read by the net, +2 next)."""
    image, _ = draw_scene([("red", "50", 400.0, 300.0, 52.0, 0.2)], seed=2)
    voted = []

    class Overruling(TallyReader):
        def _vote_against(self, ink, die, face, scores, params):
            voted.append(face)
            return True

    blind = replace(TallyParams(), min_score=2.0, pair_vote=2.0, clipped_pair_vote=2.0)
    (die,) = Overruling(model_a, blind, face_net=TurnedNet(model_a, "100")).read(image)
    assert die.face == "100" and voted == []
    Overruling(model_a).read(image)  # the templates read it: the vote is taken
    assert voted and voted[0] == "50"
