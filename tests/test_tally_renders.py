"""The built-in Tally look on the project's own renders (fixtures/tallyup, test split).

The fixture library is rendered by another process and may be incomplete or absent; then
these tests skip. The bars sit a little below the level measured on the whole test split with
the built-in look, the die finder, the face net and the top-face locator (70 photos, 308 dice:
recall 98.7 %, precision 98.7 %, identity 99.0 %, faces 97.6 % of the dice found, 96.6 % of all
flat dice read right, no confident mistake). The dice only the finder finds are mostly in deep
shadow, white on white or blown out: often not named or not read, so they lower the shares of
found dice while more dice are read right in all. The targets are identity >= 99.8 %,
face >= 99.5 %.

They guard against getting worse, above all against confident wrong readings.
"""

from __future__ import annotations

import io
import math
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from lab.bench_calibration import teach_first_photos
from lab.bench_scanner import bench_videos
from scanner.evaluate import PERTURBATIONS, Scorecard, score_perturbed
from scanner.face_net import FaceNet
from scanner.finder import DieFinder, FinderRules
from scanner.frames import UNSURE
from scanner.labels import LabelledDie, photo_labels
from scanner.reader import Scanner
from scanner.tally import TallyReader
from scanner.tally_model import TallyParams, default_model
from scanner.top_face import TopFaceNet

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tallyup"


def _card(split: str) -> Scorecard:
    labels = [label for label in photo_labels(FIXTURES, split) if label.image.is_file()] if FIXTURES.is_dir() else []
    if sum(len(label.dice) for label in labels) < 20:
        pytest.skip(f"fewer than 20 labelled Tally dice rendered in {FIXTURES} ({split})")
    scanner = Scanner("tallyup")
    card = Scorecard()
    for label in labels:
        image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
        if image is None:
            pytest.skip(f"{label.image} is being written")
        card.add(label.image.name, label.dice, scanner.read(image))
    return card


def test_the_built_in_look_reads_the_test_split_without_confident_mistakes():
    card = _card("test")
    summary = card.summary()
    assert summary["detection_precision"] >= 0.975, card.failures
    assert summary["detection_recall"] >= 0.97, card.failures
    assert summary["identity_accuracy"] >= 0.98, card.failures
    # The target of issue 5: at most 0.2 % (fewer than one die in 308).
    assert summary["wrong_confident_rate"] <= 0.002, card.failures
    assert summary["face_accuracy"] >= 0.96, card.confusion_table()
    assert summary["read_right_of_all"] >= 0.95, card.confusion_table()


def test_faces_left_unread_in_the_lamps_reflection_are_marked_glare():
    """tallyup-s12-r01 (dev split): the lamp's reflection turns four Tally dice's top faces white,
    print and all, and they are left unread; the scanner marks those (DieReading.glare), so the
    table can tell the player to move the lamp, and none of the dice it read."""
    label = next(label for label in photo_labels(FIXTURES) if label.image.name == "tallyup-s12-r01.jpg")
    readings = Scanner("tallyup").read(cv2.imread(str(label.image)))
    assert sorted(r.die for r in readings if r.glare) == ["blue", "orange", "purple", "yellow"]
    assert all(r.face == UNSURE for r in readings if r.glare)
    assert sum(r.face != UNSURE for r in readings) == 3
    assert not any(r.shade for r in readings)


def test_a_die_left_unread_in_a_walls_deep_shadow_is_marked_shade():
    """tallyup-s17-r04 (dev split): the green 30 lies in the deep shadow of the tray's wall, too
    dark to read; the scanner marks it (DieReading.shade), so the table can tell the player to
    light that side of the tray, and none of the dice it read."""
    image, truth = one_die(FIXTURES, "tallyup-s17-r04.jpg", "green")
    readings = Scanner("tallyup").read(image)
    assert [(r.die, r.face, r.shade, r.glare) for r in readings
            if math.dist(r.center, truth.center) < 0.5 * truth.size] == [("green", UNSURE, True, False)]
    assert not any(r.shade or r.glare for r in readings if r.face != UNSURE)


def test_an_unread_die_in_deep_shade_the_finder_hardly_sees_stays_marked_shade():
    """tallyup-s17-r08 through a sensor's grain and JPEG: the purple 20 in the black wall's deep
    shadow, left unread. The finder traces it at 0.05, below FinderRules.shade_trace, as it does
    squares of a wooden rim in a taught look's orange, which are dropped
    (TallyReader._without_unseen); a die in a wall's deep shade stays, marked so."""
    image, truth = one_die(FIXTURES, "tallyup-s17-r08.jpg", "purple")
    grainy = dict(PERTURBATIONS)["noise 6, JPEG q90"](image)
    readings = Scanner("tallyup").read(grainy)
    assert [(r.die, r.face, r.shade) for r in readings
            if math.dist(r.center, truth.center) < 0.5 * truth.size] == [("purple", UNSURE, True)]


def test_empty_trays_have_no_dice():
    empties = sorted(FIXTURES.glob("*-empty.jpg")) if FIXTURES.is_dir() else []
    if not empties:
        pytest.skip("no empty-tray renders yet")
    scanner = Scanner("tallyup")
    found = {path.name: [(d.die, d.face) for d in scanner.read(cv2.imread(str(path)))] for path in empties}
    # Until the finder judged unread white and unnamed readings (TallyReader._without_unseen),
    # one tray of light wood showed an unread Up Die (tallyup-s15-empty).
    assert not any(found.values()), found


@pytest.fixture(scope="module")
def nets() -> tuple[DieFinder, FaceNet, TopFaceNet]:
    """The shipped die finder, face net and top-face locator, loaded once for the tests that read one die."""
    return DieFinder(), FaceNet(), TopFaceNet()


def one_die(folder: Path, photo: str, die: str) -> tuple[np.ndarray, LabelledDie]:
    """(the photo, its labelled `die`), or the test is skipped where it is not rendered."""
    label = next((label for label in photo_labels(folder) if label.image.name == photo), None)
    if label is None or not label.image.is_file():
        pytest.skip(f"{photo} is not rendered")
    return cv2.imread(str(label.image), cv2.IMREAD_COLOR), next(d for d in label.dice if d.die == die)


def read_there(image: np.ndarray, truth: LabelledDie, nets: tuple[DieFinder, FaceNet, TopFaceNet],
               params: TallyParams = TallyParams(), rules: FinderRules = FinderRules(), located: bool = True
               ) -> list[tuple[str | None, str | None]]:
    """(die, face) of each reading at the labelled die `truth` (`located`: with the top-face locator)."""
    finder, face_net, top_face = nets
    reader = TallyReader(default_model(), params, finder=finder, finder_rules=rules, face_net=face_net,
                         top_face=top_face if located else None)
    return [(r.die, r.face) for r in reader.read(image) if math.dist(r.center, truth.center) < 0.5 * truth.size]


@pytest.mark.parametrize("photo, die, face, without_pass", [("tallyup-s18-r02.jpg", "orange", "star", []),
                                                             ("tallyup-s07-r08.jpg", "red", "50", [("red", "50")])])
def test_a_die_in_a_walls_shadow_is_found_where_the_shade_is_lifted(photo, die, face, without_pass, nets):
    """Two dice of the dev split lie in the tray wall's shadow (a white board, a plaid cloth),
    too dark for their colour band and for the finder in the picture as it comes: the shade
    pass (TallyReader._with_shaded) finds them and reads them right. Without it the orange star
    is missed. Over the dev split it added these two; over the test split four dice on a white
    board, none of them wrong. (With the top-face locator the red 50 is read without the
    shade pass too, so the pass is measured without the locator. Since the face net learned
    from the facemore set, the red 50's print also reads on the square the finder finds in the
    picture as it comes, without the locator or the pass.)"""
    image, truth = one_die(FIXTURES, photo, die)
    assert truth.face == face
    assert read_there(image, truth, nets) == [(die, face)]
    assert read_there(image, truth, nets, located=False) == [(die, face)]
    assert read_there(image, truth, nets, rules=replace(FinderRules(), shade_gain=math.inf), located=False) == without_pass


@pytest.mark.parametrize("photo, at", [("tallyup-s02-r00.jpg", (1138.0, 530.0)), ("tallyup-s07-r05.jpg", (161.0, 516.0)),
                                       ("tallyup-s15-r02.jpg", (369.0, 126.0))])
def test_a_light_patch_of_tray_is_not_read_as_an_unread_up_die(photo, at, nets, monkeypatch):
    """A pale stripe of plaid cloth, light wood grain: the colour blobs take them for the white
    Up Die, whose print they cannot read, and the player would be asked to tap a die that is not
    there. The finder, looking at the whole frame, sees no die there (TallyReader._without_unseen);
    every labelled die of the photo is read as before."""
    label = next(label for label in photo_labels(FIXTURES) if label.image.name == photo)
    image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
    finder, face_net, top_face = nets
    reader = TallyReader(default_model(), finder=finder, face_net=face_net, top_face=top_face)

    def stray(readings: list) -> list:
        return [r for r in readings if all(math.dist(r.center, truth.center) >= 0.5 * truth.size for truth in label.dice)]

    kept = reader.read(image)
    monkeypatch.setattr(TallyReader, "_without_unseen", lambda self, image, dice, traced, unnamed=True: dice)
    unjudged = reader.read(image)
    assert stray(kept) == []
    assert [(r.die, r.face) for r in stray(unjudged)] == [("up", "unsure")]
    assert math.dist(stray(unjudged)[0].center, at) < 10.0
    # (A confidence may move a little: the Up Die's name is free for the finder's dice now.)
    assert [(r.die, r.face, r.center) for r in kept] == [(r.die, r.face, r.center) for r in unjudged if r not in stray(unjudged)]


def test_a_die_in_deep_shade_whose_trace_is_faint_is_looked_for_there(nets):
    """tallyup-s17-r08: the purple 20 lies in the black wall's deep shadow. In the picture as it
    comes the finder scores it below its own bar, and the shade pass looked again only where a
    die it is sure of lay in shade, unread; the Tally reader takes a fainter trace
    (FinderRules.shade_trace) as worth that second look, and the die is found and read. Over
    the dev split this reads this one die more, over dev as other cameras would take it 7,
    over the Tally check set (fixtures/tallycheck) 1, with no confident mistake more on any
    set."""
    image, truth = one_die(FIXTURES, "tallyup-s17-r08.jpg", "purple")
    assert truth.face == "20"
    assert read_there(image, truth, nets) == [("purple", "20")]
    sure_only = replace(FinderRules(), shade_trace=nets[0].threshold)
    assert read_there(image, truth, nets, rules=sure_only) == []


def test_a_die_in_deep_shade_the_finder_is_sure_of_is_added_for_the_player_to_set(nets):
    """tallyup-s17-r06 through a brighter tone curve (gamma 0.8, one of PERTURBATIONS): the Up
    Die lies in the black wall's deep shadow. With the shade lifted the finder is sure it is the
    Up Die, but its print is too dark to read there; it is added unread (the player sets its
    face) rather than left out of the roll (FinderRules.shade_unread_score)."""
    image, truth = one_die(FIXTURES, "tallyup-s17-r06.jpg", "up")
    brighter = dict(PERTURBATIONS)["gamma 0.8"](image)
    assert read_there(brighter, truth, nets) == [("up", "unsure")]
    assert read_there(brighter, truth, nets, rules=replace(FinderRules(), shade_unread_score=math.inf)) == []


def test_a_die_in_deep_shade_its_colour_names_is_added_where_the_finder_agrees_less_surely(nets):
    """tallyup-s17-r04 (dev split): the green die lies in the black wall's deep shadow. With the
    shade lifted its colour is clearly green's, and the finder takes it for the green die at
    0.87, under sure_identity: two signs that agree (FinderRules.shade_unread_identity), so it
    is added unread for the player to set. Over the dev split, teach and lean sets, the Tally
    check set, those in the calibration bench's lamps and dev as other cameras would take it,
    this adds this die (on dev and four of its five cameras) and nothing else."""
    image, truth = one_die(FIXTURES, "tallyup-s17-r04.jpg", "green")
    rules = FinderRules()
    assert read_there(image, truth, nets) == [("green", "unsure")]
    assert read_there(image, truth, nets, rules=replace(rules, shade_unread_identity=rules.sure_identity)) == []


def test_an_unnamed_die_in_shade_is_read_again_where_the_shade_is_lifted(nets, monkeypatch):
    """lean-tallyup-s01-r01 in the calibration bench's warm light with the bluish room light
    (lab.bench_calibration.LOOKS), uncalibrated: the blue die's blob, in the wall's shadow, is
    found but too dark to be named by colour. The shade pass reads it again on the picture
    with the shade lifted, where the finder finds it too (TallyReader._unnamed_in_shade), and
    it is named and read. Over dev, lean and the check set (fixtures/tallycheck) in the bench's
    lamps it reads 9 such flat dice more, in their own light 2 of the check set, none wrong."""
    from lab.bench_calibration import LOOKS
    from scanner.tally import TallyReader

    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s01-r01.jpg", "blue")
    bluish = LOOKS[2].apply(image)
    assert read_there(bluish, truth, nets) == [("blue", truth.face)]
    monkeypatch.setattr(TallyReader, "_unnamed_in_shade", lambda self, dice, found, brightness: {})
    # Left unnamed and unread, where the finder sees no die in the picture as it comes: no die
    # to it (TallyReader._without_unseen).
    assert read_there(bluish, truth, nets) == []
    monkeypatch.setattr(TallyReader, "_without_unseen", lambda self, image, dice, traced, unnamed=True: dice)
    assert read_there(bluish, truth, nets) == [("unsure", "unsure")]


def test_a_die_in_a_walls_shadow_touching_another_is_found_there(nets):
    """lean-tallyup-s00-r00: the orange die lies in the wall's shadow against another die. In
    the shade lifted the net scores it under near_score, so it was taken for its neighbour's
    side face; named by a free colour and its face read, it needs only read_near_score
    (FinderRules), and the shade pass adds it. Over the dev split and the teach set this changes
    nothing; over the lean set it adds this die, over the test split three, none read wrong."""
    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s00-r00.jpg", "orange")
    rules = FinderRules()
    assert read_there(image, truth, nets) == [("orange", truth.face)]
    assert read_there(image, truth, nets, rules=replace(rules, read_near_score=rules.near_score)) == []


def test_a_clipped_orange_die_that_looks_yellow_is_named_by_its_edge(nets):
    """lean-tallyup-s08-r03: the lamp clips the orange die's top towards yellow (58 % of it
    clipped) and its star is on both dice, so the print cannot tell them apart; its rim and
    sides, turned away from the lamp, stay orange, which a yellow die's never are
    (TallyParams.rival_rim_share). Without that look it stays yellow and unsure. Over the test
    split it names three more such dice, all right; on the lean set also one that leans (its
    face is read, as on every leaning Tally die the reader takes for flat); nothing else
    changes on any set."""
    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s08-r03.jpg", "orange")
    assert read_there(image, truth, nets) == [("orange", truth.face)]
    assert read_there(image, truth, nets, replace(TallyParams(), rival_rim_share=math.inf)) == [("yellow", "unsure")]


def test_a_less_clipped_orange_die_read_as_a_yellow_star_is_named_by_its_edge(nets):
    """The same die as a grainier camera would take it (noise 6, JPEG q90, one of
    PERTURBATIONS): only 34 % of its top clips, under rival_clipped, so its yellowed colour
    alone named it and its star, on both dice, was read as the yellow die's: a confident
    mistake. A face its rival has too is checked against the die's edge from
    rim_rival_clipped on, and the edge is orange."""
    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s08-r03.jpg", "orange")
    grainy = dict(PERTURBATIONS)["noise 6, JPEG q90"](image)
    assert read_there(grainy, truth, nets) == [("orange", truth.face)]
    assert read_there(grainy, truth, nets, replace(TallyParams(), rim_rival_clipped=math.inf)) == [("yellow", truth.face)]


def test_a_clipped_orange_die_read_as_yellow_is_named_by_the_finder(nets):
    """teach-s00-r02 through a softer lens (blur 0.7 px, one of PERTURBATIONS): 37 % of the
    orange die's top clips, so its yellowed colour names it yellow, and its (70) was read as
    the yellow die's (40): a confident mistake. Its edge shows no orange, but the finder,
    which sees the whole die, is sure it is orange, and no other die of the roll is: a yellow
    die never turns orange where it clips (TallyParams.finder_rival_clipped)."""
    image, truth = one_die(FIXTURES.parent / "tallyup-teach", "teach-s00-r02.jpg", "orange")
    assert truth.face == "(70)"
    softer = dict(PERTURBATIONS)["blur 0.7 px"](image)
    assert read_there(softer, truth, nets) == [("orange", "(70)")]
    assert read_there(softer, truth, nets, replace(TallyParams(), finder_rival_clipped=math.inf)) == [("yellow", "(40)")]


def test_a_weak_template_read_the_face_net_clearly_puts_nearer_another_face_is_not_taken(nets):
    """tallyup-s06-r08 (test split) through a softer lens (blur 0.7 px): the Up Die's x2
    first matched the +2's templates best (0.77), while the face net put the print at 0.96 to
    the x2 and 0.54 to the +2 (TallyParams.net_overrule_ratio). The +2 so left unsure, the
    square placed again reads the x2; taking the templates' word, the die was left unsure."""
    image, truth = one_die(FIXTURES, "tallyup-s06-r08.jpg", "up")
    assert truth.face == "x2"
    softer = dict(PERTURBATIONS)["blur 0.7 px"](image)
    assert read_there(softer, truth, nets) == [("up", "x2")]
    assert read_there(softer, truth, nets, replace(TallyParams(), net_overrule_ratio=-1.0)) == [("up", "unsure")]


def test_a_clipped_orange_star_whose_edge_shows_orange_is_read(nets):
    """tallyup-s03-r08 (test split): half of the orange die's top clips, so its colour lies as
    near the yellow die's, and its star is on both: named orange by its colour, its face was
    left unsure. Its edge shows far more orange than yellow, and a clipped yellow die never
    turns orange, so the die keeps its name and its star is read (TallyReader._kept_by_rim)."""
    image, truth = one_die(FIXTURES, "tallyup-s03-r08.jpg", "orange")
    assert truth.face == "star"
    assert read_there(image, truth, nets) == [("orange", "star")]
    assert read_there(image, truth, nets, replace(TallyParams(), rival_rim_share=math.inf)) == [("orange", "unsure")]


def test_a_blurred_circled_face_missing_an_eighth_of_its_ring_is_read(nets):
    """tallyup-s03-r03 (test split): the green die moved as the shutter closed, and one eighth
    of its (40)'s ring shows almost no ink (0.05) while the others show 0.62 or more: a ring
    all the same, not the part of one that a misplaced square or a side face shows
    (TallyParams.min_ring_rest). Requiring ink in every eighth left it unsure."""
    image, truth = one_die(FIXTURES, "tallyup-s03-r03.jpg", "green")
    assert truth.face == "(40)"
    assert read_there(image, truth, nets) == [("green", "(40)")]
    assert read_there(image, truth, nets, replace(TallyParams(), min_ring_rest=math.inf)) == [("green", "unsure")]


def test_a_blue_die_glare_blew_out_white_is_named_by_its_edge_not_taken_for_the_up_die(nets):
    """tallyup-s13-r05 (test split): the lamp blows the blue die's top out white, so its colour
    names it the Up Die (which is not in the roll) and its print is gone. Its edge stays blue,
    and partly purple where it clips; the purple die lies elsewhere in the frame, so that purple
    is the blue die's too, and the die is named blue, its face left for the player
    (TallyParams.blown_rim_clipped)."""
    image, truth = one_die(FIXTURES, "tallyup-s13-r05.jpg", "blue")
    assert read_there(image, truth, nets) == [("blue", "unsure")]
    assert read_there(image, truth, nets, replace(TallyParams(), blown_rim_clipped=math.inf)) == [("up", "unsure")]


def test_a_half_lit_die_beside_another_is_added_when_it_reads_as_a_free_die(nets):
    """tallyup-s01-r05: the purple die lies half in the wall's shadow beside the blue one; the
    net scores it 0.42, under near_score, and the shade pass cannot read its print. Named purple
    (no other die is) and its face read, it cannot be the blue die's side face or shadow, so
    read_near_score admits it. Over the dev split, the teach set and the lean set this changes
    nothing; it adds one die on the test split and one of the taught alt look, both read right.
    (With the top-face locator the die is read without the rule too, so the rule is measured
    without the locator. Without it the shade pass adds the die unread, for the player to
    set: FinderRules.shade_unread_score.)"""
    image, truth = one_die(FIXTURES, "tallyup-s01-r05.jpg", "purple")
    rules = FinderRules()
    assert read_there(image, truth, nets) == [("purple", truth.face)]
    assert read_there(image, truth, nets, located=False) == [("purple", truth.face)]
    without = replace(rules, read_near_score=rules.near_score)
    assert read_there(image, truth, nets, rules=without, located=False) == [("purple", "unsure")]
    assert read_there(image, truth, nets, rules=replace(without, shade_unread_score=math.inf), located=False) == []


def test_a_blue_die_whose_white_print_was_taken_for_the_up_die_is_named_on_the_finders_square(nets):
    """tallyup-s14-r01 (dev split): the blue die's large white "50" and the lamp's sheen make a
    white blob that is taken for the Up Die, and its best printed square lies half on the green
    felt, so the ring inside that square's edge looks green. The finder's square sits on the
    die's face: its ring is blue, the finder is sure it is the blue die, no other die is, and the
    print reads as the blue 50 (TallyReader._renamed_by_ring). Without the finder it stays the
    Up Die, face unsure. Over the dev split as other cameras would take it, 6 dice so renamed
    are read right (and the Up Die beside one of them, no longer taken), and nothing else
    changes on the dev, teach, lean or alt sets."""
    image, truth = one_die(FIXTURES, "tallyup-s14-r01.jpg", "blue")
    assert truth.face == "50"
    assert read_there(image, truth, nets) == [("blue", "50")]
    _, face_net, top_face = nets
    without_finder = TallyReader(default_model(), face_net=face_net, top_face=top_face)
    assert [(r.die, r.face) for r in without_finder.read(image)
            if math.dist(r.center, truth.center) < 0.5 * truth.size] == [("up", "unsure")]


def test_a_plus_100_whose_plus_the_glare_left_a_dot_is_not_read_minus_100(nets):
    """tallyup-teach/teach-s00-r04: the Up Die's +100 half blown out by the lamp's glare, its
    "+" a dot. Its templates favour -100; the strokes that tell the two apart vote 0.46 for
    -100's, which is no telling, so the templates leave it unsure (TallyParams.pair_veto). With
    the veto at 0.4 it was read -100: 200 points the wrong way. The face net's code of the print
    lies clearly nearer +100 than -100, its twin (TallyParams.twin_cosine), and reads it right."""
    image, truth = one_die(FIXTURES.parent / "tallyup-teach", "teach-s00-r04.jpg", "up")
    assert truth.face == "+100"
    assert read_there(image, truth, nets) == [("up", "+100")]
    no_twins = replace(TallyParams(), twin_cosine=2.0)
    assert read_there(image, truth, nets, no_twins) == [("up", "unsure")]
    assert read_there(image, truth, nets, replace(no_twins, pair_veto=0.4)) == [("up", "-100")]


def test_a_plus_100_the_templates_read_minus_100_is_not_read_so_when_the_face_net_reads_its_twin(nets):
    """tallyup-teach/teach-s02-r02: the templates read the Up Die's +100 as -100, at 0.54,
    while the face net finds the print nearer +100, the twin (TallyReader._net_against): the
    readers disagree, and the flattened cut is then read +100. Without twins (so without
    the check) the templates' -100 stands: 200 points the wrong way."""
    image, truth = one_die(FIXTURES.parent / "tallyup-teach", "teach-s02-r02.jpg", "up")
    assert truth.face == "+100"
    assert read_there(image, truth, nets) == [("up", "+100")]
    # (Its square, much smaller than the other dice, reads another face at their size: TallyParams.small_face.)
    assert read_there(image, truth, nets, replace(TallyParams(), twin_cosine=2.0, small_face=0.0)) == [("up", "-100")]


def test_a_weak_template_read_the_face_net_finds_nearest_no_face_is_not_taken(nets):
    """lean/tallyup lean-tallyup-s07-r02: a green 40 whose square the templates read as a star,
    at a best correlation of 0.77 (below TallyParams.net_check_below). The face net finds that
    print nearer no face than any face (TallyReader._net_against): the star is not taken, and
    the die is then read right. Without the check it was a confident star: 40 points lost."""
    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s07-r02.jpg", "green")
    assert truth.face == "40"
    assert read_there(image, truth, nets) == [("green", "40")]
    assert read_there(image, truth, nets, replace(TallyParams(), net_check_below=0.0)) == [("green", "star")]


@pytest.mark.parametrize("folder, photo, camera, then", [
    # Left unsure since the face net turns only the likeliest cut of a coloured die (see
    # TallyParams.code_turns); the four codes lie by 40 less clearly than the six did.
    (FIXTURES, "tallyup-s05-r08.jpg", "JPEG q60", UNSURE),
    (FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s07-r02.jpg", "via 640 px", "40"),
])
def test_a_weak_star_the_face_net_does_not_clearly_see_is_not_taken(folder, photo, camera, then, nets):
    """A green 40 as another camera would take it, its square a little off the print: the
    templates match it best as a star (weakly), and the face net finds the print nearest the
    star by too little (TallyParams.star_net_ratio) or nearest another face. The star is not
    taken and the die is then read right or left unsure (`then`); without the check it is a
    confident star."""
    image, truth = one_die(folder, photo, "green")
    assert truth.face == "40"
    image = dict(PERTURBATIONS)[camera](image)
    assert read_there(image, truth, nets) == [("green", then)]
    assert read_there(image, truth, nets, replace(TallyParams(), star_net_ratio=1e6)) == [("green", "star")]


@pytest.mark.parametrize("folder, photo, die", [(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s07-r02.jpg", "yellow"),
                                                 (FIXTURES, "tallyup-s18-r02.jpg", "purple")])
def test_a_twenty_both_readers_lean_to_is_read(folder, photo, die, nets):
    """A yellow 20 with part of its top blown by glare (lean set) and a purple 20 small in a dark corner
    (dev split): the templates rank 20 first but not by their margins, and the face net's mean
    code lies nearest 20, though not by code_ratio. The two agree (TallyParams.agree_code_ratio):
    read 20. Either alone left it unsure."""
    image, truth = one_die(folder, photo, die)
    assert truth.face == "20"
    assert read_there(image, truth, nets) == [(die, "20")]
    assert read_there(image, truth, nets, replace(TallyParams(), agree_code_ratio=0.0)) == [(die, "unsure")]


def test_a_print_the_templates_find_as_like_a_rival_dies_face_is_told_by_the_face_net(nets, monkeypatch):
    """lean/tallyup lean-tallyup-s04-r02: a yellow 20, clipped by the lamp, whose colour lies
    near the orange die's too. Its print is read as that of the yellow die, which must also win
    over every face of the orange die. The templates match it to 20 at 0.93 and to orange's 70
    and 60 at 0.83, short of their margin; the face net's code of it lies clearly nearer 20
    (TallyReader._net_tells_apart)."""
    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s04-r02.jpg", "yellow")
    assert truth.face == "20"
    assert read_there(image, truth, nets) == [("yellow", "20")]
    monkeypatch.setattr(TallyReader, "_net_tells_apart", lambda *args: False)
    assert read_there(image, truth, nets) == [("yellow", "unsure")]


def test_an_up_die_s_three_both_readers_lean_to_is_read(nets):
    """tallyup-s16-r03 (test split) as a 1920 px camera would take it: the Up Die's +3, its
    found square much smaller than the other dice. On the square placed at their size, the
    shadow's shade divided out, the templates rank +3 first but not by their margins, and the
    face net's mean code lies nearest +3, though not by code_ratio: the readers agree
    (TallyParams.agree_code_ratio). (While the net turned every cut, TallyParams.code_turns,
    both readers leaned to +2 on the square found, and the die was left unsure only because
    the strokes that tell +2 from +3 showed +3: TallyParams.pair_veto.)"""
    image, truth = one_die(FIXTURES, "tallyup-s16-r03.jpg", "up")
    assert truth.face == "+3"
    image = dict(PERTURBATIONS)["via 1920 px"](image)
    assert read_there(image, truth, nets) == [("up", "+3")]
    assert read_there(image, truth, nets, replace(TallyParams(), agree_code_ratio=0.0)) == [("up", UNSURE)]


@pytest.mark.parametrize("folder, photo, unread", [(FIXTURES, "tallyup-s07-r08.jpg", [("up", "unsure")]),
                                                    (FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s09-r00.jpg", [])])
def test_a_white_up_die_whose_blob_is_its_blown_half_is_read_on_the_finders_square(folder, photo, unread, nets):
    """A white Up Die under the lamp (dev split -100, lean set +100): its colour blob is the
    clipped half of its top, a square too small and off the print. The finder scores its
    square below 0.5 but above its own bar for a die (FinderRules.reread_score = min_score):
    read there, the print reads right. At 0.5 the dev one stayed unsure, the lean one unfound."""
    image, truth = one_die(folder, photo, "up")
    assert read_there(image, truth, nets) == [("up", truth.face)]
    assert read_there(image, truth, nets, rules=replace(FinderRules(), reread_score=0.5)) == unread


@pytest.mark.parametrize("photo, die, face, unlocated", [("tallyup-s13-r06.jpg", "up", "x2", "x2"),
                                                          ("tallyup-s16-r06.jpg", "orange", "70", "unsure")])
def test_a_face_left_unsure_on_the_square_found_is_read_where_the_locator_sees_the_top_face(photo, die, face, unlocated,
                                                                                             nets):
    """Two test dice whose squares, found and placed, take in a side face or the shadow: read
    on the top face where the locator (scanner/top_face.py) sees it, they read right. Over the
    test split it added 5 dice read right, none wrong. (Since the face net learned from the
    facemore set, the Up Die's x2 reads on the placed square too.)"""
    image, truth = one_die(FIXTURES, photo, die)
    assert truth.face == face
    assert read_there(image, truth, nets) == [(die, face)]
    assert read_there(image, truth, nets, located=False) == [(die, unlocated)]


def test_a_located_face_mostly_in_shade_is_read_with_the_shade_divided_out_only(nets):
    """tallyup-s10-r08 (dev): a yellow (40) half in the wall's shadow. On the square the
    locator places, the print as seen, cut by the shadow's edge, looks like a 70; with the
    shade divided out it is unsure. Most of the face lies in shade (TallyParams.located_shade),
    so only the second read counts."""
    image, truth = one_die(FIXTURES, "tallyup-s10-r08.jpg", "yellow")
    assert truth.face == "(40)"
    assert read_there(image, truth, nets) == [("yellow", "unsure")]
    assert read_there(image, truth, nets, replace(TallyParams(), located_shade=math.inf)) == [("yellow", "70")]


def test_yellow_dice_under_a_warm_lamp_at_half_the_light_are_read_yellow():
    """tallyup-s17-r01 (dev) in the calibration bench's warm light (lab.bench_calibration.LOOKS),
    uncalibrated: the render's lamp was warm already, and the white patch's green comes to
    0.69 of its red. Trusted as the lamp's colour (scanner.tally_colour.LAMP_GREEN_PER_RED) it is
    balanced out, and the yellow star reads yellow; untrusted, the tint stays and it read as
    the orange die's star."""
    from lab.bench_calibration import LOOKS

    image, truth = one_die(FIXTURES, "tallyup-s17-r01.jpg", "yellow")
    warm = LOOKS[1].apply(image)
    assert [(r.die, r.face) for r in Scanner("tallyup").read(warm)
            if math.dist(r.center, truth.center) < 0.5 * truth.size] == [("yellow", "star")]


def test_an_orange_die_under_a_warmer_lamp_at_half_the_light_is_not_read_red():
    """lean-tallyup-s01-r00 in the calibration bench's warm light, uncalibrated: its white
    patch's blue comes to 0.45 of its red, a warm lamp, not a print; trusted as the lamp's
    colour (scanner.tally_colour.LAMP_BLUE_PER_RED from 0.35) the tint is balanced out, and
    the orange 60 is read; untrusted, it read as the red die's 50."""
    from lab.bench_calibration import LOOKS
    from scanner.tally_colour import LAMP_BLUE_PER_RED
    from scanner.tossup import illuminant

    image, truth = one_die(FIXTURES.parent / "lean" / "tallyup", "lean-tallyup-s01-r00.jpg", "orange")
    warm = LOOKS[1].apply(image)
    blue, _, red = (float(v) for v in illuminant(warm))
    assert LAMP_BLUE_PER_RED[0] <= blue / red < 0.45
    assert [(r.die, r.face) for r in Scanner("tallyup").read(warm)
            if math.dist(r.center, truth.center) < 0.5 * truth.size] == [("orange", "60")]


def test_a_clipped_orange_die_is_not_read_yellow_under_stray_light_a_profile_takes_off():
    """teach-s00-r02 under stray light of 10 that a profile's black level takes off again: the
    orange (70), more than half clipped by the lamp, comes back at 245 where the camera clipped
    it. Looked for at 253, its clipping went unseen, its colour (clipping turns orange yellow)
    named it yellow and it read as the yellow die's (40); found where the frame's clipped
    pixels pile up (scanner.tally_blobs.clip_levels), it is read as the clipped die it is."""
    image, truth = one_die(FIXTURES.parent / "tallyup-teach", "teach-s00-r02.jpg", "orange")
    assert truth.face == "(70)"
    stray = cv2.add(image, (10, 10, 10, 0))
    readings = Scanner("tallyup", black_level=(10.0, 10.0, 10.0)).read(stray)
    assert [(r.die, r.face) for r in readings
            if math.dist(r.center, truth.center) < 0.5 * truth.size] == [("orange", "(70)")]


def test_a_yellow_die_half_in_a_walls_shadow_is_not_read_from_its_lit_part(nets):
    """tallyup-s10-r08 (dev) in the calibration bench's warm light, uncalibrated: the yellow
    (40) lies half in the wall's shadow, and its lit half, only a brighter yellow, was taken
    for the print and read as a 70 (TallyParams.min_ink_whiteness)."""
    from lab.bench_calibration import LOOKS

    image, truth = one_die(FIXTURES, "tallyup-s10-r08.jpg", "yellow")
    assert truth.face == "(40)"
    warm = LOOKS[1].apply(image)
    assert ("yellow", "70") not in read_there(warm, truth, nets)
    assert read_there(warm, truth, nets, replace(TallyParams(), min_ink_whiteness=0.0)) == [("yellow", "70")]


ALT = FIXTURES.parent / "alt"
#: Issue 5: teaching may use at most this many labelled photos of the user's own dice.
TEACH_PHOTOS = 20


def test_twenty_photos_teach_a_differently_looking_set():
    """fixtures/alt: another Tally look (other shades, ink, font and star) in scenes of its own.
    Taught from at most 20 of its teach photos, the reader reads its other tables; the built-in
    look, which never saw it, does worse."""
    result, used = teach_first_photos(ALT / "tallyup-teach", count=TEACH_PHOTOS)
    assert used == TEACH_PHOTOS, "the alt teach set is not rendered"
    taught, built_in = Scanner("tallyup", tally=result.model), Scanner("tallyup")
    taught_card, built_in_card = Scorecard(), Scorecard()
    for label in photo_labels(ALT / "tallyup"):
        image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
        taught_card.add(label.image.name, label.dice, taught.read(image))
        built_in_card.add(label.image.name, label.dice, built_in.read(image))
    summary, before = taught_card.summary(), built_in_card.summary()
    assert summary["labelled_dice"] >= 40
    # Measured (18 photos of dice and 2 of an empty tray, 93 dice), with the die finder and the
    # face net: taught recall 97.8 %, precision 98.9 %, identity and faces 100 % of the dice
    # found, 97.8 % of all flat dice read right, no confident mistake (the built-in look:
    # identity 86.4 %, 77.8 % of all read right). The last die short of the targets was a
    # yellow 70 in a wall's shade, its colour as near orange; the finder named it once its
    # doubt about the unseen look, put on a Toss Up die, was set aside (TallyReader._finder_choice).
    # The two dice not found are the black Up Die against the tray's black wall (s01-r05, -r07).
    # Issue 5's targets, on this set after teaching:
    assert summary["identity_accuracy"] >= 0.998 and summary["identity_accuracy"] > before["identity_accuracy"]
    assert summary["wrong_confident_rate"] <= 0.002 and summary["wrong_confident_rate"] <= before["wrong_confident_rate"]
    assert summary["face_accuracy"] >= 0.995, taught_card.confusion_table()
    assert summary["read_right_of_all"] >= 0.955 and summary["read_right_of_all"] > before["read_right_of_all"]
    assert summary["detection_precision"] >= 0.975 and summary["detection_recall"] >= 0.96, taught_card.failures


def test_every_tally_video_gives_one_reading_per_roll_soon_after_it_settles_and_no_wrong_face():
    """Issue 5 wants every Tally video read right. Measured: one reading per roll in all three,
    0.33-0.43 s after each settles; all six rolls right. The Up Die of tallyup-v0's second roll
    (+3, 28 pixels a side at 640x480, half on a plaid cloth) is read by the strokes that tell
    +3 from +2 (TallyParams.pair_code_ratio; unsure in every frame before). tallyup-v1's +100
    was unsure in the first three still frames and is read in the fifth, since the watcher goes
    on reading while a face is unsure (unsure_extra_s)."""
    rows = bench_videos(FIXTURES.parent / "videos", "tallyup", Scanner("tallyup"), io.StringIO())
    assert len(rows) == 3, "the Tally fixture videos are missing"
    for row in rows:
        assert row["rolls_read"] == row["rolls_labelled"], row
        for roll in row["rolls"]:
            assert 0.0 <= roll["latency_s"] <= 0.5, row
            assert roll["wrong_confident"] == 0, row
    assert all(roll["faces_right"] for row in rows for roll in row["rolls"]), rows


@pytest.mark.slow  # about a minute on 2 cores: CI runs it in its own pass (.ci/run)
def test_the_test_split_as_other_cameras_would_take_it_has_few_confident_mistakes():
    """Resampled through another resolution, a stronger JPEG, a brighter tone curve, a softer
    lens, a dim room's sensor grain (scanner.evaluate.PERTURBATIONS): the same 70 photos, 1848
    dice in all. Measured: recall 98.6 %, identity 98.2 %, faces 96.2 %, four confident
    mistakes (0.23 %): one through the stronger JPEG, one through the softer lens, two through
    the grain."""
    labels = [label for label in photo_labels(FIXTURES, "test") if label.image.is_file()] if FIXTURES.is_dir() else []
    if sum(len(label.dice) for label in labels) < 20:
        pytest.skip(f"fewer than 20 labelled Tally dice rendered in {FIXTURES} (test)")
    card = Scorecard.merged(score_perturbed(Scanner("tallyup").read, labels).values())
    summary = card.summary()
    assert summary["wrong_confident_rate"] <= 0.005, card.failures
    assert summary["face_accuracy"] >= 0.94 and summary["identity_accuracy"] >= 0.96, card.confusion_table()
    assert summary["detection_recall"] >= 0.96 and summary["detection_precision"] >= 0.97, card.failures
