"""Teaching the Tally look: profiles, bad teaching data reported file by file, the CLI."""

from __future__ import annotations

import io
import json
import math

import pytest
from click.testing import CliRunner

from calibration.cli import calibrate
from scanner.profile import Profile, ProfileError, load_profile, save_profile
from calibration.teach import build_default, teach_folders
from scanner.reader import Scanner, load_scanner
from scanner.tally_model import default_model, model_from_json
from tests.test_tally_synthetic import LOOK_A, LOOK_B, as_labelled_photos, draw_scene, photo_set


@pytest.fixture(scope="module")
def teach_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("teach")
    as_labelled_photos(photo_set(LOOK_B, 18, seed=21, every_face=True), folder)
    return folder


def _copy(src, dst):
    dst.mkdir(parents=True, exist_ok=True)
    for path in src.iterdir():
        (dst / path.name).write_bytes(path.read_bytes())
    return dst


def test_teach_writes_a_profile_the_scanner_reads_with(teach_dir, tmp_path, capsys):
    out = tmp_path / "mine.json"
    result = teach_folders([teach_dir], out)
    printed = capsys.readouterr().out
    assert result is not None and not result.problems
    assert "purple" in printed and "(20) x" in printed and "saved" in printed
    profile = load_profile(out)
    assert profile.tallyup == result.model
    scanner = load_scanner("tallyup", out)
    image, labels = draw_scene([("green", "(40)", 640, 360, 54, 0.4), ("purple", "(20)", 800, 300, 54, 1.0)], LOOK_B)
    readings = scanner.read(image)
    assert sorted((r.die, r.face) for r in readings) == [("green", "(40)"), ("purple", "(20)")]


def test_teaching_keeps_the_rest_of_an_existing_profile(teach_dir, tmp_path):
    out = save_profile(Profile(name="kitchen", die_size=50.0), tmp_path / "kitchen.json")
    teach_folders([teach_dir], out)
    profile = load_profile(out)
    assert profile.name == "kitchen" and profile.die_size == 50.0 and profile.tallyup is not None


def test_too_few_examples_are_named(tmp_path, capsys):
    folder = tmp_path / "few"
    folder.mkdir()
    as_labelled_photos(photo_set(LOOK_A, 2, seed=5, every_face=True), folder)
    result = teach_folders([folder], tmp_path / "p.json")
    printed = capsys.readouterr().out
    assert result is not None
    assert ("red", "100", 0) in result.too_few()
    assert "too few examples" in printed and "red 100 (0)" in printed


def test_bad_teaching_data_is_reported_file_by_file_and_left_out(teach_dir, tmp_path, capsys):
    folder = _copy(teach_dir, tmp_path / "bad")
    # an unknown face, a missing image, a die labelled with the wrong colour, a damaged label
    unknown = json.loads((folder / "photo-00.json").read_text())
    unknown["dice"][0]["face"] = "+7"
    (folder / "photo-00.json").write_text(json.dumps(unknown))
    (folder / "photo-01.png").unlink()
    swapped = json.loads((folder / "photo-02.json").read_text())
    first, second = swapped["dice"][0], swapped["dice"][1]
    first["die"], second["die"] = second["die"], first["die"]
    first["face"], second["face"] = second["face"], first["face"]
    (folder / "photo-02.json").write_text(json.dumps(swapped))
    (folder / "photo-03.json").write_text("{not json")
    out = tmp_path / "p.json"
    result = teach_folders([folder], out)
    printed = capsys.readouterr().out
    assert result is not None
    problems = "\n".join(result.problems)
    assert "photo-00.json" in problems and "'+7'" in problems
    assert "photo-01.json" in problems and "missing" in problems
    swapped_problems = [p for p in result.problems if p.startswith("photo-02.json")]
    assert len(swapped_problems) == 2 and all("do not match" in p and "that die left out" in p for p in swapped_problems)
    assert "photo-03.json" in problems
    assert not any(name in problems for name in ("photo-04", "photo-05", "photo-06"))
    assert result.photos_used == 18 - 3  # photo-02's five other dice still teach
    assert "problem: photo-00.json" in printed


def test_a_face_no_photo_showed_is_read_with_the_built_in_print(capsys):
    """A die shows faces the teaching photos may not: the green die's 30, say. Without a print of
    it the reader took a green 30 for its 40 and was sure of it; the built-in look's print of the
    face reads it until the user teaches it."""
    import cv2

    from calibration.teach import learn_tally_model, print_result
    from scanner.labels import photo_labels
    from tests.test_calibration_steps import FIXTURES

    teach = [label for label in photo_labels(FIXTURES / "tallyup-teach") if label.dice
             and not any(die.die == "green" and die.face == "30" for die in label.dice)]
    result = learn_tally_model([(label.image.name, cv2.imread(str(label.image)), label.dice) for label in teach])
    assert ("green", "30", 0) in result.too_few() and ("green", "30") in result.borrowed
    assert not any(pair in result.borrowed for pair in result.counts)  # only faces never taught
    assert "30" in result.model.codes
    print_result(result)
    assert "read with the built-in look's prints until taught: " in capsys.readouterr().out
    scanner = Scanner("tallyup", tally=result.model)
    for name in ("tallyup-s03-r05", "tallyup-s16-r03"):  # test-split tables, the green die showing 30
        label = [label for label in photo_labels(FIXTURES / "tallyup", split="test") if label.image.stem == name][0]
        green = next(die for die in label.dice if die.die == "green")
        readings = scanner.read(cv2.imread(str(label.image)))
        read = min(readings, key=lambda r: math.dist(r.center, green.center))
        assert math.dist(read.center, green.center) < 10
        assert (read.die, read.face) == ("green", "30") and read.confidence >= 0.5, read


def test_a_tray_patterned_in_a_taught_colour_holds_no_die_name():
    """Table s08's wooden rim falls into the orange taught from the teach photos, square after
    square. Its squares are tray, not dice, and must not hold the name "orange" against the
    orange die itself, which the lamp clips until it looks yellow: with orange held, nothing
    told its star from the yellow die's, and it was read as the yellow star for sure."""
    from lab.bench_calibration import teach_first_photos
    from tests.test_calibration_steps import FIXTURES

    result, _ = teach_first_photos(FIXTURES / "tallyup-teach")
    for readings in _orange_stars_read_as_orange(Scanner("tallyup", tally=result.model), ("s08-r00", "s08-r08")):
        assert not any(r.die == "yellow" and r.face == "star" for r in readings)  # no yellow die in these rolls


def _orange_stars_read_as_orange(scanner: Scanner, rolls) -> list:
    """Asserts that `scanner` reads the orange die of each of table s08's `rolls` (an orange star,
    its top clipped until it looks yellow) as the orange star; the readings of each roll."""
    import cv2

    from scanner.labels import load_photo_label
    from tests.test_calibration_steps import FIXTURES

    found = []
    for roll in rolls:
        label = load_photo_label(FIXTURES / "tallyup" / f"tallyup-{roll}.json")
        orange = next(die for die in label.dice if die.die == "orange")
        readings = scanner.read(cv2.imread(str(label.image)))
        read = min(readings, key=lambda r: math.dist(r.center, orange.center))
        assert math.dist(read.center, orange.center) < 10
        assert (orange.face, read.die, read.face) == ("star", "orange", "star"), (roll, read)
        found.append(readings)
    return found


@pytest.fixture(scope="module")
def wizard_look():
    """The look taught as the wizard teaches: the teach photos in turn until every face was seen
    three times (18 rolls)."""
    from collections import Counter

    import cv2

    from calibration.teach import learn_tally_model
    from scanner.labels import photo_labels
    from scanner.tally_model import DIE_FACES
    from tests.test_calibration_steps import FIXTURES

    seen: Counter = Counter()
    rolls = []
    for label in photo_labels(FIXTURES / "tallyup-teach"):
        rolls.append(label)
        seen.update((die.die, die.face) for die in label.dice)
        if all(seen[(die, face)] >= 3 for die, faces in DIE_FACES.items() for face in faces):
            break
    return learn_tally_model([(f"roll {i + 1}", cv2.imread(str(label.image)), label.dice)
                              for i, label in enumerate(rolls)]).model


def test_a_blob_whose_face_does_not_read_holds_no_die_name(wizard_look):
    """Taught as the wizard teaches, the look's orange leaves table s08's wooden rim three orange
    squares: too few for a pattern, and one of them, its face never read, held "orange" from the
    orange die itself, clipped to look yellow, whose star was then read as the yellow die's for
    sure."""
    _orange_stars_read_as_orange(Scanner("tallyup", tally=wizard_look), ("s08-r02", "s08-r04"))


def test_a_clipped_die_whose_print_is_a_face_only_its_rival_has_is_that_rival(wizard_look):
    """s08-r06: the orange 60, clipped until it looks yellow, lies by the wooden rim, whose
    colour the look taught on other tables cannot tell from its edge's orange. Its print is no
    face of the yellow die (the 20 at best), and clearly the orange 60."""
    assert _read_at_orange(Scanner("tallyup", tally=wizard_look), "s08-r06") == [("orange", "60")]


def test_a_clipped_die_against_a_wall_in_its_colour_is_named_by_its_edge_side_by_side(wizard_look):
    """s08-r01: the orange 70, clipped until it looks yellow, lies against the wooden wall, which
    the look taught on other tables sees as orange. A 70 is a face of the yellow die too, so its
    edge must name it: orange there, less the tray ring's orange, is weighed side by side, and
    the wall behind one side no longer cancels the orange on the other three."""
    assert _read_at_orange(Scanner("tallyup", tally=wizard_look), "s08-r01") == [("orange", "70")]


def _read_at_orange(scanner: Scanner, roll: str) -> list:
    """(die, face) of each reading `scanner` makes at the orange die of the Tally roll `roll`."""
    import cv2

    from scanner.labels import load_photo_label
    from tests.test_calibration_steps import FIXTURES

    label = load_photo_label(FIXTURES / "tallyup" / f"tallyup-{roll}.json")
    orange = next(die for die in label.dice if die.die == "orange")
    readings = scanner.read(cv2.imread(str(label.image)))
    return [(r.die, r.face) for r in readings if math.dist(r.center, orange.center) < 0.5 * orange.size]


def test_a_square_of_rim_in_a_taught_colour_that_the_finder_sees_no_die_on_is_dropped(wizard_look):
    """Taught as the wizard teaches, the look's orange takes squares of table s08's wooden rim for
    orange dice whose face it cannot read: dice to tap that are not there, roll after roll. The
    finder, which sees the whole frame, leaves no trace of a die on these, so they are dropped.
    (s08-r00's keeps one: the finder traces a die there at 0.12.)"""
    import cv2

    from scanner.labels import load_photo_label
    from tests.test_calibration_steps import FIXTURES

    scanner = Scanner("tallyup", tally=wizard_look)
    for roll in ("s08-r02", "s08-r03", "s08-r04", "s08-r08"):
        label = load_photo_label(FIXTURES / "tallyup" / f"tallyup-{roll}.json")
        readings = scanner.read(cv2.imread(str(label.image)))
        # The rim runs along the frame's left and top edges, the dice lie well inside the tray.
        on_rim = [r for r in readings if not any(math.dist(r.center, die.center) < 0.5 * die.size for die in label.dice)
                  and (r.center[0] < 130 or r.center[1] < 60)]
        assert not on_rim, (roll, on_rim)


def test_the_renderers_marks_leave_dice_out_only_of_the_built_in_looks_build():
    """A label's scene may mark dice the renderer saw partly hidden or under the lamp's sheen; a
    user's labels carry no such marks, so teaching learns from every die as the wizard does, and
    only the built-in look's build from the renders leaves those out (and borrows no face)."""
    from calibration.teach import learn_tally_model

    photos = photo_set(LOOK_A, 6, seed=3, every_face=True)
    marked = [(f"photo-{i}", image, labels, {"glare_fraction": [0.4] + [0.0] * (len(labels) - 1)})
              for i, (image, labels) in enumerate(photos)]
    from collections import Counter

    first = Counter((labels[0].die, labels[0].face) for _, labels in photos)
    as_user = learn_tally_model(marked)
    built = learn_tally_model(marked, from_renders=True)
    for pair, times in first.items():
        assert built.counts.get(pair, 0) == as_user.counts[pair] - times
    assert built.borrowed == [] and as_user.photos_used == built.photos_used == 6


def test_a_failed_teach_never_touches_the_existing_profile(tmp_path):
    out = save_profile(Profile(name="kitchen"), tmp_path / "kitchen.json")
    before = out.read_bytes()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert teach_folders([empty], out) is None
    assert out.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))


def test_profile_tallyup_section_is_validated(tmp_path, teach_dir):
    out = tmp_path / "p.json"
    teach_folders([teach_dir], out)
    good = json.loads(out.read_text())
    for change, message in [
        ({"bodies": {"pink": {"lab": [1, 2, 3], "spread": [1, 1, 1]}}}, "unknown die 'pink'"),
        ({"faces": [{"die": "red", "face": "20", "ink": ""}]}, "has no face '20'"),
        ({"faces": [{"die": "red", "face": "50", "ink": "AAAA"}]}, "bytes"),
        ({"version": 9}, "version"),
        ({"bodies": {"red": {"lab": [1, 2, 3], "spread": [1, 1, 1], "ink_lighter": "yes"}}}, "ink_lighter"),
    ]:
        bad = dict(good, tallyup=dict(good["tallyup"], **change))
        out.write_text(json.dumps(bad))
        with pytest.raises(ProfileError, match=message):
            load_profile(out)
    # older profiles carried an empty free-form object: the built-in look
    out.write_text(json.dumps(dict(good, tallyup={})))
    assert load_profile(out).tallyup is None


def test_check_command_tells_a_look_taught_with_another_face_net(tmp_path, teach_dir):
    runner = CliRunner()
    out = tmp_path / "p.json"
    teach_folders([teach_dir], out)
    result = runner.invoke(calibrate, ["check", str(out)])
    assert result.exit_code == 0 and "note" not in result.output
    stale = json.loads(out.read_text())
    stale["tallyup"]["code_net"] = "0123456789ab"
    out.write_text(json.dumps(stale))
    result = runner.invoke(calibrate, ["check", str(out)])
    assert result.exit_code == 0 and "another face net" in result.output and "teach the Tally Dice again" in result.output
    # A look taught before the face net existed has no codes at all: it loads and reads, with templates.
    del stale["tallyup"]["codes"], stale["tallyup"]["code_net"]
    out.write_text(json.dumps(stale))
    result = runner.invoke(calibrate, ["check", str(out)])
    assert result.exit_code == 0 and "taught before the face net" in result.output
    assert load_profile(out).tallyup.codes == {}


def test_check_command(tmp_path):
    runner = CliRunner()
    out = save_profile(Profile(name="kitchen"), tmp_path / "kitchen.json")
    result = runner.invoke(calibrate, ["check", str(out)])
    assert result.exit_code == 0 and "OK" in result.output
    out.write_text('{"version": 1, "name": ')
    result = runner.invoke(calibrate, ["check", str(out)])
    assert result.exit_code != 0 and "damaged" in result.output


def test_teach_command(teach_dir, tmp_path):
    runner = CliRunner()
    out = tmp_path / "taught.json"
    result = runner.invoke(calibrate, ["teach", "--dice", "tallyup", "--labels", str(teach_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "purple" in result.output and out.exists()
    assert "face net" in result.output and "a code for each of" in result.output
    result = runner.invoke(calibrate, ["teach", "--labels", str(tmp_path / "none"), "--out", str(tmp_path / "x.json")])
    assert result.exit_code != 0 and not (tmp_path / "x.json").exists()


def test_the_built_in_look_ships_and_validates():
    model = default_model()
    assert set(model.bodies) == {"red", "orange", "yellow", "green", "blue", "purple", "up"}
    assert model_from_json(model.to_json()) == model


def test_any_finds_tally_dice_and_toss_up_dice_without_reading_them(teach_dir, tmp_path):
    out = tmp_path / "p.json"
    teach_folders([teach_dir], out)
    scanner = Scanner("any", tally=load_profile(out).tallyup)
    image, labels = draw_scene([("blue", "20", 500, 300, 54, 0.2), ("orange", "60", 800, 450, 54, 0.7)], LOOK_B)
    readings = scanner.read(image)
    assert len(readings) == 2
    assert all(r.die is None and r.face is None for r in readings)
    for label in labels:
        assert min(math.dist(r.center, label.center) for r in readings) < 6


def test_teaching_into_a_dim_tables_profile_cleans_the_photos_as_its_scanner_will(teach_dir, tmp_path, monkeypatch, capsys):
    import cv2
    import numpy as np

    from calibration import teach
    from scanner.labels import load_photo_label
    from scanner.reader import cleaned_picture

    def raw_of(label_name):
        return cv2.imread(str(load_photo_label(teach_dir / label_name).image), cv2.IMREAD_COLOR)

    level, gains = (4.0, 3.0, 2.0), (1.8, 1.4, 1.2)
    out = save_profile(Profile(name="evening", black_level=level, light_gains=gains), tmp_path / "evening.json")
    taught = []

    def learn(photos, *args, **kwargs):
        taught.extend((name, image) for name, image, _, _ in photos)
        raise ValueError("stop here")

    monkeypatch.setattr(teach, "learn_tally_model", learn)
    assert teach_folders([teach_dir], out) is None
    assert "read as" in capsys.readouterr().out
    assert taught
    for name, image in taught:
        raw = raw_of(name)
        assert np.array_equal(image, cleaned_picture(raw, level, gains)) and not np.array_equal(image, raw)
    taught.clear()
    plain = save_profile(Profile(name="daylight"), tmp_path / "daylight.json")
    teach_folders([teach_dir], plain)
    name, image = taught[0]
    assert np.array_equal(image, raw_of(name))


def test_the_built_in_look_is_not_rebuilt_without_the_facemore_set(tmp_path):
    """build_default learns its prints from the git-ignored facemore set too: without it, it
    says how to get it and leaves the built-in look as it was."""
    out = tmp_path / "tally_default.json"
    out.write_text("as it was")
    report = io.StringIO()
    assert build_default(tmp_path, out, report) is None
    assert "facemore" in report.getvalue() and "fixtures/README.md" in report.getvalue()
    assert out.read_text() == "as it was"
